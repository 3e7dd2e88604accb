"""Top-k pooling: each query pools only its ``k`` nearest keys (exact neighbours).

Neighbours come from a KD-tree (``scipy.spatial.cKDTree``, any ``d``) over the
scaled keys. For a kernel that never grows with the distance, every key left
out weighs at most what the ``k``-th neighbour weighs, so

.. math::

    \\frac{W_{out}}{W_{in}} \\le \\frac{(m - k)\\,K(r_k)}{\\sum_{i \\le k} K(r_i)} = \\beta,
    \\qquad |f_k(q) - f(q)| \\le \\beta \\cdot \\operatorname{range}(v)

bounds what the truncation can change; :func:`topk_state` returns ``β`` per query.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..kernels import Kernel, is_monotone

#: Queries whose neighbours are gathered at once.
QUERY_CHUNK = 2**15


def refusal(kernel: Kernel, d: int) -> str | None:
    """Why ``topk`` cannot pool this kernel, or None: it needs one whose weights never
    grow with the distance (the nearest keys are then the heaviest)."""
    if not is_monotone(kernel):
        return (
            "'topk' needs a built-in distance kernel that never grows with the distance; "
            f"received {kernel.name!r}"
        )
    return None


def neighbours(queries, keys, k: int):
    """``(n, k)`` indices of each query's ``k`` nearest keys (scaled coordinates), nearest first."""
    from scipy.spatial import cKDTree

    tree = cKDTree(np.asarray(keys, np.float64))
    _, index = tree.query(np.asarray(queries, np.float64), k=k, workers=-1)
    return np.asarray(index, np.int64).reshape(len(queries), k)


class NearestState(NamedTuple):
    """Each query's pooling state over its nearest keys (the fields of
    :class:`attnpool.sums.state.PoolingState`, NumPy float64)."""

    max_log: np.ndarray
    weight_sum: np.ndarray
    weighted_values: np.ndarray


def _candidate_state(queries, candidates, values, n_keys, inside, largest_inside, kernel):
    r2 = 0.0
    for j in range(queries.shape[1]):  # (n, k) a column, not an (n, k, d) difference
        u = queries[:, j, None] - candidates[:, :, j]
        r2 = r2 + u * u
    if inside is not None:  # the support's edge decided on the unscaled inputs
        r2 = np.where(inside, np.minimum(r2, largest_inside), np.inf)
    with np.errstate(divide="ignore", over="ignore"):
        log_weights = np.asarray(kernel.log_profile(r2), np.float64)
    top = np.max(log_weights, axis=1)
    shift = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(under="ignore"):
        weights = np.exp(log_weights - shift[:, None])
    weighted = np.matmul(weights[:, None, :], values)[:, 0]
    state = NearestState(top, weights.sum(axis=1), weighted)
    with np.errstate(divide="ignore", invalid="ignore", under="ignore"):
        left_out = (n_keys - candidates.shape[1]) * np.exp(log_weights[:, -1] - shift)
        left_out = left_out / state.weight_sum
    return state, np.where(state.weight_sum > 0, left_out, 0.0)


def topk_state(
    queries, keys, values, kernel: Kernel, k: int, *, edges=None
) -> tuple[NearestState, np.ndarray]:
    """State over each query's ``k`` nearest keys and the bound ``β (n,)`` on what was left out
    (NumPy, float64).

    ``queries (n, d)``, ``keys (m, d)`` scaled by the bandwidth; ``values (m, p)``.
    ``edges``: the unscaled inputs and bandwidth that decide a compact support's edge, as
    in :func:`attnpool.methods.sparse.sparse_sums`.
    """
    from .sparse import inside_support, largest_inside

    queries, keys = (np.asarray(a, np.float64) for a in (queries, keys))
    values = np.asarray(values, np.float64)
    k = min(k, keys.shape[0])
    index = neighbours(queries, keys, k)
    states, bounds = [], []
    for start in range(0, queries.shape[0], QUERY_CHUNK):
        rows = index[start : start + QUERY_CHUNK]
        inside = None
        if edges is not None:
            raw_queries = np.repeat(edges[0][start : start + QUERY_CHUNK], k, axis=0)
            inside = inside_support(raw_queries, edges[1][rows.ravel()], edges[2], kernel)
            inside = inside.reshape(rows.shape)
        state, bound = _candidate_state(queries[start : start + QUERY_CHUNK], keys[rows],
                                        values[rows], keys.shape[0], inside,
                                        largest_inside(kernel), kernel)  # fmt: skip
        states.append(state)
        bounds.append(bound)
    state = NearestState(*(np.concatenate(leaves) for leaves in zip(*states, strict=True)))
    return state, np.concatenate(bounds)
