"""How :func:`attnpool.density.log_density` sums on the host, method by method: NumPy
pairs for small problems, and in one column the ``fgt`` expansions (the Gaussian) and
the ``sparse`` support windows (compact kernels), all exact; ``native`` (the Gaussian,
any dimension, exact) and ``binned`` (``d ≤ 2``, each density within a relative
tolerance, the rows its bound cannot settle summed exactly over the keys within their
reach). Each returns ``log Σ_i w_i K_h(q − x_i)`` normalised by ``Π h`` and ``∫K``, not
by the weights' total."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import kernels as _kernels
from ..kernels.calculus import kernel_integrals
from ..sums import plan

#: Pairs up to which a density is summed in NumPy (the planner's).
HOST_PAIRS = plan.HOST_PAIRS


def expansions_pay(pairs: int) -> bool:
    """Whether the ``fgt`` expansions sum ``pairs`` Gaussian pairs of one column faster
    than NumPy: from :data:`HOST_PAIRS`, or from the planner's ``EXPANSION_MIN_PAIRS``
    where their compiled loop is already built (a first small call compiles nothing)."""
    from ..methods import native

    return pairs > HOST_PAIRS or (pairs >= plan.EXPANSION_MIN_PAIRS and native.expansions_ready())


def host_log_sums(x: Any, q: Any, record: Any, h: Any, w: Any) -> Any:
    """``log Σ_i w_i K_h(q − x_i)`` (normalised) on the host, by the backend the planner's
    density table (:mod:`attnpool.sums.plan`) gives NumPy arrays — NumPy pairs, the
    ``fgt`` expansions of a Gaussian column (rows they leave unsettled by pairs), a
    compact kernel's support windows (``sparse``), the compiled Gaussian loop
    (``native``, passing over far keys) — or None where it gives the compiled engines."""
    from ..kernels.mixed import MixedColumns, log_sums
    from ..sums.facts import density_facts
    from ..sums.observation_weights import too_wide_to_truncate

    truncating = not too_wide_to_truncate(w)  # (fgt and native)
    backend = plan.plan(density_facts(record, x, q, h, numpy=True, truncating=truncating)).backend
    columns = MixedColumns(x, "c" * x.shape[1], record)
    if backend == "numpy":
        return log_sums([(q, x, h, columns, "density")], weights=w)
    if backend == "fgt":
        return _expansion_log_sums(x, q, h, w, columns)
    if backend == "sparse":
        return _sparse_log_sums(x, q, record, h, w)
    if backend == "native":
        return _native_log_sums(x, q, record, h, w)
    return None


def _sparse_log_sums(x: Any, q: Any, record: Any, h: Any, w: Any) -> Any:
    """Normalised log sums of a compact kernel over the keys inside its support only
    (:func:`attnpool.methods.sparse.sparse_sums`, exact): ``−inf`` where none is."""
    from ..methods.sparse import sparse_sums

    values = np.ones((x.shape[0], 1)) if w is None else w[:, None]
    sums = sparse_sums(q, x, values, 1.0 / h, record, edges=(q, x, h))
    top = float(np.asarray(record.log_profile(np.zeros(()))))  # the sums are in K(0)
    integral = kernel_integrals(record, x.shape[1])[0]
    with np.errstate(divide="ignore"):
        return np.log(sums[:, 1]) + top - math.log(integral) - float(np.sum(np.log(h)))


def _expansion_log_sums(x: Any, q: Any, h: Any, w: Any, columns: Any) -> Any:
    """Gaussian log sums of one column by the ``fgt`` expansions, the rows they leave
    unsettled (far from every key) pair by pair over the keys within their reach
    (:func:`attnpool.methods.fgt.reach`: the rest weigh less than 1e-14 of each row)."""
    from ..kernels.mixed import log_sums
    from ..methods import fgt

    values = np.ones((x.shape[0], 0)) if w is None else w[:, None]  # (the counts: column 0)
    sums, settled, nearest2 = fgt.expansion_sums(q, x, values, 1.0 / h[0], return_nearest=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.log(sums[:, -1]) - 0.5 * nearest2 - math.log(math.sqrt(2 * math.pi) * h[0])
    again = np.flatnonzero(~settled | ~np.isfinite(out))
    if again.size:
        count = x.shape[0] if w is None else float(np.sum(w) / np.min(w))
        radii = h[0] * fgt.reach(nearest2[again], count)
        near = fgt.keys_within(x[:, 0], q[again, 0], radii)
        out[again] = log_sums([(q[again], x[near], h, columns, "density")],
                              weights=None if w is None else w[near])  # fmt: skip
    return out


def _native_log_sums(x: Any, q: Any, record: Any, h: Any, w: Any) -> Any:
    """Normalised Gaussian log sums by the compiled C loop: ``ln 2 · (shift + log2 Σ)``."""
    from ..methods import native

    reason = native.refusal(record, x.shape[1])
    if reason:
        raise ValueError(f"method: {reason}")
    values = np.ones((x.shape[0], 1)) if w is None else w[:, None]
    scale = 1.0 / h
    sums, shift = native.native_sums(q, x, values, scale, return_shift=True)
    with np.errstate(divide="ignore"):
        out = math.log(2.0) * shift + np.log(sums[:, 1])
    d = x.shape[1]
    return out - 0.5 * d * math.log(2 * math.pi) - float(np.sum(np.log(h)))


def method_log_sums(
    x: Any, q: Any, record: Any, h: Any, w: Any, name: str, options: Any, exact: Any
) -> Any:
    """``method="fgt"``, ``"sparse"``, ``"native"``, ``"tree"`` or ``"binned"``: refused where the
    method cannot serve, else its sums, the rows it leaves unsettled summed exactly
    (``exact(keys, queries)``: their normalised log densities, as ``"auto"`` sums them)."""
    from .._units import HOST_MAX_EXTENT, extent_in_bandwidths
    from ..kernels.mixed import MixedColumns
    from ..methods import sparse
    from ..methods.binned import refusal
    from ..sums.observation_weights import refuse_wide_span

    d = x.shape[1]
    refuse_wide_span(name, w)
    if extent_in_bandwidths(q, x, h) > HOST_MAX_EXTENT:
        raise ValueError(
            f"method: {name!r} takes data within 2^40 bandwidths of its centre; use 'auto'"
        )
    columns = MixedColumns(x, "c" * d, record)
    if name == "fgt":
        if not (_kernels.is_gaussian(record) and d == 1):
            raise ValueError(
                f"method: 'fgt' sums the Gaussian in one column; received {record.name!r} in {d}"
            )
        return _expansion_log_sums(x, q, h, w, columns)
    if name == "sparse":
        reason = sparse.refusal(record, d)
        if reason:
            raise ValueError(f"method: {reason}")
        return _sparse_log_sums(x, q, record, h, w)
    if name == "native":
        return _native_log_sums(x, q, record, h, w)
    if name == "tree":
        return _tree_log_sums(x, q, record, h, w, options, exact)
    reason = refusal(record, d)
    if reason:
        raise ValueError(f"method: {reason}")
    if w is None:
        return _binned_log_sums(x, q, record, h, options, exact, None)
    kept = w > 0
    x, w = x[kept], w[kept]
    # in units of the smallest weight, whose key weighs at least K(r) in a row's sum (the
    # reach of the rows binning leaves assumes it)
    smallest = float(np.min(w))
    return _binned_log_sums(x, q, record, h, options, exact, w / smallest) + math.log(smallest)


def _tree_log_sums(x: Any, q: Any, record: Any, h: Any, w: Any, options: Any, exact: Any) -> Any:
    """Normalised log sums by the k-d tree (:mod:`attnpool.methods.tree`), each density
    within ``options.atol + options.rtol · f``; rows whose weights all underflowed under
    the tree's shift (a smooth kernel far from every key), and those the walk leaves,
    summed exactly, as ``"auto"`` sums them."""
    from ..methods import tree

    reason = tree.refusal(record, x.shape[1])
    if reason:
        raise ValueError(f"method: {reason}")
    if w is not None:
        raise ValueError(
            "weights: method 'tree' bounds its error for unweighted densities only; use an "
            "exact method ('auto', 'dense', 'stream', 'sparse', 'fgt', 'native')"
        )
    integral = kernel_integrals(record, x.shape[1])[0]
    log_norm = math.log(integral) + float(np.sum(np.log(h)))
    absolute = options.atol * x.shape[0] * math.exp(log_norm)  # in the sums' own units
    sums, shift, unsettled = tree.tree_sums(
        q / h, x / h, np.zeros((x.shape[0], 0)), record, rtol=options.rtol, atol=absolute,
        leaf_size=options.leaf_size, edges=(q, x, h),
    )  # fmt: skip
    with np.errstate(divide="ignore"):
        out = np.log(sums[:, 0]) + shift - log_norm
    again = np.flatnonzero(((sums[:, 0] == 0) & (not record.compact)) | unsettled)
    if again.size:
        out[again] = exact(x, q[again], None) + math.log(x.shape[0])
    return out


def _binned_log_sums(x: Any, q: Any, record: Any, h: Any, options: Any, exact: Any, w: Any) -> Any:
    """Normalised log sums by binning (:mod:`attnpool.methods.binned_host`): each density
    within ``options.tolerance`` of itself, or summed exactly over the keys within its
    reach (:mod:`attnpool.methods.binned_near`). ``w``: the keys' weights, at least 1, or
    None."""
    from ..methods.binned_host import binned_sums, plan_grid
    from ..methods.binned_near import keys_near, near_log_sums

    d, scale = x.shape[1], 1.0 / h
    total = x.shape[0] if w is None else float(np.sum(w))
    plan = plan_grid(q, x, scale, record, options.grid_size, options.tolerance)
    grid, reach, hopeless = plan.grid, plan.reach, plan.hopeless
    top = float(np.asarray(record.log_profile(np.zeros(()))))
    constant = top - math.log(kernel_integrals(record, d)[0]) - float(np.sum(np.log(h)))
    if hopeless:
        return exact(x, q, w) + math.log(total)
    # one column finds the keys near a row without each key's cell (8 bytes a key)
    sums, error, binning = binned_sums(q, x, scale, record, grid, reach, cells=d == 2,
                                       correct_queries=plan.correct_queries,
                                       order=plan.order, weights=w)  # fmt: skip
    weight = sums[:, 0]
    settled = (weight > 0) & (error <= options.tolerance * weight)
    with np.errstate(divide="ignore", invalid="ignore"):  # unsettled rows: redone below
        out = np.log(weight) + constant
    again = np.flatnonzero(~settled)
    if again.size:  # exactly, over the keys that can matter to them
        least = weight[again] - error[again]  # the exact sum is at least this
        rows = q[again] * scale
        if w is None:  # the compiled pass sums unweighted keys
            summed = near_log_sums(rows, record, binning, total, least, x, scale)
            if summed is not None:
                out[again] = summed + constant
                return out
        near = keys_near(rows, record, binning, total, least, x, scale)
        out[again] = -np.inf
        if near.size:
            near_w = None if w is None else w[near]
            found = exact(x[near], q[again], near_w)
            count = near.size if near_w is None else float(np.sum(near_w))
            out[again] = found + math.log(count)
    return out
