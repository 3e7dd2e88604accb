"""Hostile kernel-sum problems the backends are held to the textbook's sums on."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import numpy as np

import attnpool
from attnpool import kernels
from attnpool.sums.backends import exact_log_sums
from attnpool.sums.problem import LogSums, SumProblem


@contextlib.contextmanager
def brute_backend(
    name: str, serves: attnpool.Serves | None = None,
    settled: Callable[[int], np.ndarray] | None = None,
) -> Iterator[str]:  # fmt: skip
    """A brute-force backend (every pair by NumPy pairs) registered as ``name`` for the
    block, declaring ``serves`` (``Serves()`` where None); ``settled(n)``: the rows it
    vouches for (None: all), the others left to the finishing step."""

    class Brute:
        def log_sums(self, problem: SumProblem) -> LogSums:
            found = exact_log_sums(problem)
            if settled is None:
                return found
            return found._replace(settled=settled(problem.sizes[0]))

    backend = Brute()
    backend.name, backend.serves = name, serves or attnpool.Serves()
    attnpool.register_backend(backend)
    try:
        yield name
    finally:
        attnpool.unregister_backend(name)


def hostile_problem(kernel: str, d: int, seed: int, weighted: bool) -> SumProblem:
    """400 keys 1e6 from the origin in bandwidths of 40, a fifth of them tied; queries at
    keys, between them and 30 bandwidths beyond; values at ``2^±1000``; observation
    weights spanning ``2^±250`` where ``weighted``."""
    rng = np.random.default_rng(seed)
    keys = rng.uniform(-1, 1, (400, d)) * 1e3 + 1e6
    keys[:80] = keys[0]  # ties
    queries = np.concatenate([keys[:20], rng.uniform(-1.2, 1.2, (40, d)) * 1e3 + 1e6,
                              keys[:5] + 40.0 * 30])  # far: 30 bandwidths off  # fmt: skip
    values = np.stack([np.sin(keys[:, 0]), 2.0**-1000 * np.cos(keys[:, -1]),
                       2.0**1000 * rng.uniform(-1, 1, 400)], axis=1)  # fmt: skip
    weights = 2.0 ** rng.uniform(-250, 250, 400) if weighted else None
    return SumProblem(queries, keys, values, np.full(d, 40.0), kernels.get(kernel), weights)
