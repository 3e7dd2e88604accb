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

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from .._support.interop import precision_scope
from ..kernels import Kernel, is_monotone
from ..sums.state import PoolingState, block_state

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


@partial(jax.jit, static_argnames="kernel")
def _candidate_state(queries, candidates, values, n_keys, inside, largest_inside, *, kernel):
    diff = queries[:, None, :] - candidates
    r2 = jnp.sum(diff * diff, axis=-1)
    if inside is not None:  # the support's edge decided on the unscaled inputs
        r2 = jnp.where(inside, jnp.minimum(r2, largest_inside), jnp.inf)
    log_weights = kernel.log_profile(r2)
    state = block_state(log_weights, values)
    farthest = log_weights[:, -1] - jnp.where(jnp.isfinite(state.max_log), state.max_log, 0.0)
    left_out = (n_keys - candidates.shape[1]) * jnp.exp(farthest) / state.weight_sum
    return state, jnp.where(state.weight_sum > 0, left_out, 0.0)


def topk_state(
    queries, keys, values, kernel: Kernel, k: int, *, edges=None
) -> tuple[PoolingState, np.ndarray]:
    """State over each query's ``k`` nearest keys and the bound ``β (n,)`` on what was left out
    (NumPy, float64).

    ``queries (n, d)``, ``keys (m, d)`` scaled by the bandwidth; ``values (m, p)``.
    ``edges``: the unscaled inputs and bandwidth that decide a compact support's edge, as
    in :func:`attnpool.methods.sparse.sparse_sums`.
    """
    from .sparse import inside_support, largest_inside

    k = min(k, keys.shape[0])
    index = neighbours(queries, keys, k)
    states, bounds = [], []
    with precision_scope(np.float64):
        for start in range(0, queries.shape[0], QUERY_CHUNK):
            rows = index[start : start + QUERY_CHUNK]
            inside = None
            if edges is not None:
                raw_queries = np.repeat(edges[0][start : start + QUERY_CHUNK], k, axis=0)
                inside = inside_support(raw_queries, edges[1][rows.ravel()], edges[2], kernel)
                inside = jnp.asarray(inside.reshape(rows.shape))
            state, bound = _candidate_state(
                jnp.asarray(queries[start : start + QUERY_CHUNK], jnp.float64),
                jnp.asarray(keys[rows], jnp.float64),
                jnp.asarray(values[rows], jnp.float64),
                keys.shape[0],
                inside,
                largest_inside(kernel),
                kernel=kernel,
            )
            states.append(PoolingState(*(np.asarray(leaf) for leaf in state)))
            bounds.append(np.asarray(bound))
    state = PoolingState(*(np.concatenate(leaves) for leaves in zip(*states, strict=True)))
    return state, np.concatenate(bounds)
