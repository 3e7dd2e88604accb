"""Which way to pool: the ``method=`` argument, its options, and ``"auto"`` resolved
by the planner's pooling table (:mod:`attnpool.sums.plan`, the one place ``auto``
decides).

``method`` is a name or a configured record (:class:`Binned`, :class:`TopK`,
:class:`Tree`); a name of the methods is checked against what it declares
(:data:`attnpool.methods.options.TRAITS`) and its module's ``refusal(kernel, d)``.
On a GPU the kernels served by ``pallas`` — every kernel but the signed higher-order
ones — run on its tiled kernel; ``fused`` (``jax.nn.dot_product_attention``, float32
logits) is used only when asked for. ``fgt`` truncates Taylor expansions at a bound
of 1e-14 of each query's weight, below the float64 sum's own rounding, so it counts
as exact; ``native`` sums every pair in the working precision, like ``stream``.
``binned``, ``topk`` and ``tree`` are approximations, used only when asked for.
"""

from __future__ import annotations

import jax

from .._support.validation import is_traced
from ..kernels import Kernel
from ..sums.facts import pool_facts
from ..sums.plan import plan
from .options import check_applicable, resolve


def choose_method(
    kernel: Kernel,
    queries,
    keys,
    bandwidth,
    *,
    traced: bool,
    weights: bool,
    backend: str | None = None,
) -> str:
    """The method ``"auto"`` takes on the compiled path (the planner's pooling table) for
    queries ``(n, d)`` and keys ``(m, d)``; ``backend`` a JAX platform (None: JAX's)."""
    facts = pool_facts(kernel, queries, keys, bandwidth, traced=traced, weight_matrix=weights,
                       backend=backend or jax.default_backend())  # fmt: skip
    return plan(facts).backend


def choose(method, kernel: Kernel, q, k, h, *, weights: bool, block_size, masked=False,
           planned=None):  # fmt: skip
    """``(name, options)`` for the ``method`` argument of a pool of queries ``q (n, d)``
    over keys ``k (m, d)`` by the compiled engines or the host methods: ``"auto"``
    resolved by the planner (``planned``: its backend, where the caller planned already),
    or a clear error if the method cannot apply."""
    name, options = resolve(method)
    traced = any(is_traced(a) for a in (q, k, h))
    if name == "auto" and planned is not None:
        name = planned
    elif name == "auto":
        facts = pool_facts(
            kernel, q, k, h, traced=traced, masked=masked, weight_matrix=weights,
            block_size=block_size is not None, backend=jax.default_backend(),
        )  # fmt: skip
        name = plan(facts).backend
    check_applicable(name, kernel, k.shape[1], traced=traced, weights=weights)
    return name, options
