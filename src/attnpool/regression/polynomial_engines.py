"""The engines of a local polynomial fit, by name (:data:`ENGINES`): each fits queries
``q (k, d)`` from ``x (n, d)``, ``y (n, p)`` at bandwidths ``h (d,)`` and returns
``(estimates (k, len(orders), p), undetermined (k,))`` — or None where it does not
serve these inputs after all (the caller then takes the streamed engine) — and says
why it refuses a kernel, column count, response count and degree, or None."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from .. import kernels
from .._support.units import midrange
from .._support.validation import is_jax
from ..methods import native
from ..smoothers.windows import CHUNK_ENTRIES
from .monomials import monomials
from .polynomial_blocks import Moments, fit_block, solve

__all__ = ["ENGINES", "Engine", "compiled_fit", "native_fit", "native_refusal", "numpy_fit"]

Fit = tuple[Any, Any]


class Engine(NamedTuple):
    """A way to fit local polynomials."""

    host_only: bool  #: concrete NumPy arrays only
    fit: Callable[..., Fit | None]  #: ``(x, y, q, h, kernel, degree, orders)``
    refusal: Callable[[kernels.Kernel, int, int, int], str | None]


def _serves_all(kernel: kernels.Kernel, d: int, outputs: int, degree: int) -> None:
    return None


def numpy_fit(x: Any, y: Any, q: Any, h: Any, kernel: kernels.Kernel, degree: int,
               orders: list[tuple[int, ...]]) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """The NumPy engine: :func:`.polynomial_blocks.fit_block` over chunks of queries,
    in float64."""
    x, y, q, h = (np.asarray(a, np.float64) for a in (x, y, q, h))
    width = len(monomials(x.shape[1], degree)) ** 2
    rows = max(1, CHUNK_ENTRIES // max(1, x.shape[0] * width))
    exponents = monomials(x.shape[1], degree)
    parts = [fit_block(x, y, q[i : i + rows], h, kernel, exponents, orders)
             for i in range(0, q.shape[0], rows)]  # fmt: skip
    if not parts:
        return np.empty((0, len(orders), y.shape[1])), np.zeros(0, bool)
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def native_fit(x: Any, y: Any, q: Any, h: Any, kernel: kernels.Kernel, degree: int,
               orders: list[tuple[int, ...]], left_out: bool = False) -> Fit | None:  # fmt: skip
    """The compiled loop (:mod:`attnpool.methods.native_polynomial`): the Gaussian's sums
    (``kernel`` is the Gaussian: :func:`native_refusal` says so) in bandwidths about the
    keys' midrange, solved as the NumPy engine solves; None where the rows reach beyond
    ``native.MAX_SCALED`` bandwidths of it or a sum is not finite. ``left_out``: the
    queries are the keys, each without its own pair."""
    from ..methods.native_polynomial import native_polynomial

    x, y, q, h = (np.asarray(a, np.float64) for a in (x, y, q, h))
    centre = midrange(x)
    keys, queries = x - centre, q - centre
    reach = np.maximum(np.max(np.abs(keys), axis=0, initial=0.0),
                       np.max(np.abs(queries), axis=0, initial=0.0))  # fmt: skip
    if np.any(reach / h > native.MAX_SCALED):
        return None
    exponents, basis = monomials(x.shape[1], 2 * degree), len(monomials(x.shape[1], degree))
    sums = native_polynomial(queries, keys, y, 1.0 / h, exponents, basis, exclude_self=left_out)
    if sums is None:
        return None
    row = np.maximum(sums.reference, 0)
    reference = (sums.total, x[row], y[row])
    moments = Moments(sums.gram, sums.responses, sums.total, sums.mean * h, sums.spread * h)
    return solve(moments, q, reference, exponents[:basis], orders)


def compiled_fit(x: Any, y: Any, q: Any, h: Any, kernel: kernels.Kernel, degree: int,
                 orders: list[tuple[int, ...]], *, blocked: bool,
                 tiled: bool = False) -> tuple[Any, Any]:  # fmt: skip
    """The compiled engines (:mod:`.polynomial_program`): NumPy in float64 and NumPy out,
    JAX arrays in their precision (traceable, differentiable); ``blocked``: the keys in
    blocks (else in one), ``tiled``: by the tiled Pallas kernel."""
    import jax.numpy as jnp

    from .._support.interop import precision_scope
    from ..methods.stream import KEY_BLOCK
    from .polynomial_program import Polynomial, compiled_polynomial

    on_host = not any(is_jax(a) for a in (x, y, q, h))
    dtype = np.float64 if on_host else jnp.result_type(x, y, q, h, jnp.float32)
    width = len(monomials(x.shape[1], degree)) ** 2 * y.shape[1]
    key_block = max(64, KEY_BLOCK // width) if blocked else None
    with precision_scope(dtype):
        xd, yd, qd, hd = (jnp.asarray(a, dtype) for a in (x, y, q, h))
        spec = Polynomial.of(kernel, x.shape[1], degree, orders)
        fit, undetermined = compiled_polynomial(xd, yd, qd, hd, spec, key_block=key_block,
                                                tiled=tiled)  # fmt: skip
        if on_host:
            return np.asarray(fit, np.float64), np.asarray(undetermined)
    return fit, undetermined


def native_refusal(kernel: kernels.Kernel, d: int, outputs: int, degree: int) -> str | None:
    """Why the compiled loop cannot fit this polynomial here, or None."""
    from ..methods import native_polynomial

    reason = native.refusal(kernel, d)
    terms, basis = math.comb(d + 2 * degree, d), math.comb(d + degree, d)
    if reason is None and not native_polynomial.serves(d, outputs, terms, basis):
        reason = (
            f"'native' fits up to {native.MOMENTS_MAX_DIMS} columns and "
            f"{native.MOMENTS_MAX_VALUES} responses, {native_polynomial.MAX_TERMS} "
            f"monomials of degree up to 2·degree; received {d} columns, "
            f"{outputs} responses, {terms} monomials; use method='stream'"
        )
    return reason


#: The engines by name: NumPy pairs in float64 chunks, the compiled Gaussian loop
#: (:mod:`attnpool.methods.native_polynomial`), and the compiled programs
#: (:mod:`.polynomial_program`: the keys in one block, in blocks, or the tiled kernel).
ENGINES = {
    "numpy": Engine(True, numpy_fit, _serves_all),
    "native": Engine(True, native_fit, native_refusal),
    "dense": Engine(False, functools.partial(compiled_fit, blocked=False), _serves_all),
    "stream": Engine(False, functools.partial(compiled_fit, blocked=True), _serves_all),
    "pallas": Engine(False, functools.partial(compiled_fit, blocked=True, tiled=True), _serves_all),
}
