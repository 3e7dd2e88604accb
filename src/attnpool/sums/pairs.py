"""Local fits of signed (higher-order) kernels and of bandwidths that vary by query or
by key, over the sums layer.

For a query ``q`` and keys ``k_j`` the weight of a pair is

.. math:: w_j(q) = \\omega_j \\prod_c P(u_c^2) \\; K(u) \\Big/ \\prod_c H_c,
          \\qquad u_c = (q_c - k_{jc}) / H_c

with ``H`` the bandwidths — fixed ``(d,)``, the query's (R np's ``generalized_nn``) or
the key's (``adaptive_nn``; only then does ``Π H_c`` differ between a query's keys and
count) —, ``P`` a higher-order kernel's polynomial (1 otherwise) and ``ω_j`` the
observation weights. Only the NumPy pairs backend sums such weights
(:class:`~attnpool.sums.problem.SumProblem`'s ``bandwidth_by``, its signed kernels):
each row in float64 about its largest ``log|w|``, so no weight overflows or underflows
to ``0/0`` however small the bandwidth. The fits are the sums layer's
(:func:`attnpool.sums.layer.local_fit`): the local-constant ratio, of the responses
about their midrange (signed weights cancel: no offset is left to cancel with them),
and local linear's moments about each row's heaviest key; leave-one-out fits drop each
point's own pair.

Rows whose weights sum to zero — no key inside a compact support, or signed weights that
cancel exactly — are *empty*. With ``nearest`` they, and every row of an unbounded
kernel whose distances overflow, take the limit of vanishing bandwidths: the mean
response of the keys nearest in scaled distance (ties by weight,
:func:`attnpool.sums.layer.nearest_limit`).
"""

from __future__ import annotations

import numpy as np

from .. import kernels as _kernels
from .._support.units import midrange
from .backends import NUMPY_PAIRS
from .exact_pairs import heaviest_keys
from .layer import local_fit as layer_fit
from .layer import nearest_limit
from .problem import SumProblem

__all__ = ["local_fit", "pool", "refuse"]


def local_fit(problem: SumProblem, *, nearest: bool = True):
    """``(fit (n, p), slopes (n, d, p), empty (n,))`` of the local fit of ``problem``'s
    degree at its queries: its values' local constant or local linear fit under its
    kernel (signed, or not) and bandwidths (``bandwidth_by``: fixed, the query's or the
    key's, positive or zero), its observation weights and left-out keys; ``nearest``:
    whether empty rows take the nearest keys' mean (else NaN). ``empty`` marks the rows
    whose weights summed to zero.
    """
    values = problem.values
    middle = midrange(values) if values.shape[0] else np.zeros(values.shape[1])
    problem = problem.replace(values=values - middle)
    if problem.degree:
        problem = problem.replace(origin=heaviest_keys(problem))
    fit, slopes, empty = layer_fit(NUMPY_PAIRS, problem)
    if nearest and empty.any():
        fit[empty] = nearest_limit(problem, empty)
        slopes[empty] = 0.0
    return fit + middle, slopes, empty


def refuse(kernel: _kernels.Kernel, method, mask, return_weights: bool, arrays) -> None:
    """A ``ValueError`` naming the argument that :func:`pool` does not take with the
    higher-order ``kernel``: a key mask, the weight matrix, a method other than
    ``"auto"``, ``"dense"`` or ``"stream"``, or ``arrays`` traced by ``jit`` or ``grad``."""
    from .._support.validation import is_traced
    from ..methods.options import PAIR_METHODS, resolve

    refused = {"return_weights": return_weights, "mask": mask is not None}
    for name, asked in refused.items():
        if asked:
            raise ValueError(f"{name}: not available with the higher-order kernel {kernel.name!r}")
    if any(is_traced(a) for a in arrays):
        raise ValueError(
            f"kernel: the higher-order kernel {kernel.name!r} pools concrete arrays, not "
            "values traced by jit or grad"
        )
    method = resolve(method)[0]
    if method not in PAIR_METHODS:
        raise ValueError(
            f"method: the higher-order kernel {kernel.name!r} is summed pair by pair "
            f"({', '.join(map(repr, PAIR_METHODS))}); received {method!r}"
        )


def pool(q, k, v, h, *, kernel: _kernels.Kernel, weights, empty: str):
    """:func:`attnpool.attention_pool` of checked ``q (n, d)``, ``k (m, d)``, ``v (m, p)``,
    ``h (d,)`` with a higher-order kernel (what it refuses, :func:`refuse`): ``(n, p)`` in
    the values' precision, NumPy or JAX as ``v`` is."""
    from .._support.validation import is_jax
    from .empty_policy import fills_empty, report_empty
    from .observation_weights import check_weights

    w = None if weights is None else np.asarray(check_weights(weights, k.shape[0]), np.float64)
    q, k, v64, h = (np.asarray(a, np.float64) for a in (q, k, v, h))
    problem = SumProblem(q, k, v64, h, kernel, w)
    fit, _, empty_rows = local_fit(problem, nearest=fills_empty(kernel, empty))
    report_empty(kernel, empty, empty_rows, stacklevel=4)
    dtype = v.dtype if np.dtype(v.dtype).kind == "f" else np.float64
    if is_jax(v):
        import jax.numpy as jnp

        return jnp.asarray(fit, dtype)
    return fit.astype(dtype)
