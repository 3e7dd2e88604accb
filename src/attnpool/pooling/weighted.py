"""Attention pooling with observation weights: the pool of the augmented values
``[w, w·v]``, divided (:mod:`attnpool.sums.observation_weights`) — keys of weight 0 dropped or
masked, spans too wide for the truncating methods summed exactly."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ..methods.options import resolve
from ..sums.empty_policy import user_stacklevel

__all__ = ["UNWEIGHTED_METHODS", "weighted_pool"]


#: Methods whose error bound is for unweighted pools (they refuse observation weights).
UNWEIGHTED_METHODS = ("binned", "topk", "tree")


def weighted_pool(
    pool: Any,
    q: Any,
    k: Any,
    v: Any,
    weights: Any,
    flat: Any,
    mask: Any,
    *,
    return_weights: Any,
    **options: Any,
) -> Any:
    """``pool`` (:func:`attnpool.attention_pool`) with observation weights: the pool of
    ``[w, w·v]`` divided (:mod:`attnpool.sums.observation_weights`); keys of weight 0 dropped
    (concrete weights) or masked (traced ones)."""
    from ..methods.options import exact_engine
    from ..sums.observation_weights import (
        augmented,
        check_weights,
        divided,
        positive_keys,
        refuse_wide_span,
        too_wide_to_truncate,
    )

    name = resolve(options["method"])[0]
    if name in UNWEIGHTED_METHODS:
        raise ValueError(
            f"weights: method {name!r} bounds its error for unweighted pools only; with "
            "observation weights use an exact method ('auto', 'dense', 'stream', 'sparse', "
            "'fgt', 'native', 'pallas') or 'fused'"
        )
    dtype = np.float32 if v.dtype.kind == "f" and v.dtype.itemsize <= 4 else np.float64
    w = check_weights(weights, k.shape[0], dtype)
    k, w, mask, kept = positive_keys(k, w, mask, q.shape[0])
    refuse_wide_span(name, w)
    if name == "auto" and too_wide_to_truncate(w):  # no truncating method under "auto"
        options = {**options, "method": exact_engine(q.shape[0] * k.shape[0])}
    v = v if kept is None else v[kept]
    with warnings.catch_warnings(record=True) as caught:  # to be reported at the caller's
        warnings.simplefilter("always")
        result = pool(
            q, k, augmented(v, w), mask=mask, return_weights=return_weights, **options,
        )  # fmt: skip
    for warning in caught:
        warnings.warn(warning.message, warning.category, stacklevel=user_stacklevel())
    pooled = divided(result[0] if return_weights else result, v)
    if flat:
        pooled = pooled[:, 0]
    if not return_weights:
        return pooled
    shares = result[1] * w[None, :].astype(result[1].dtype)
    shares = shares / shares.sum(axis=1, keepdims=True)
    if kept is not None:  # the dropped keys' columns: 0
        if isinstance(shares, np.ndarray):
            full: Any = np.zeros((shares.shape[0], kept.shape[0]), shares.dtype)
            full[:, kept] = shares
        else:
            import jax.numpy as jnp

            full = jnp.zeros((shares.shape[0], kept.shape[0]), shares.dtype)
            full = full.at[:, np.flatnonzero(kept)].set(shares)
        shares = full
    return pooled, shares
