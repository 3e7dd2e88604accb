"""Key masks: which keys each query may attend.

A mask is None (every key), a boolean ``(n, m)`` matrix — or ``(1, m)``, the same keys for
every query — or ``(n,)`` valid lengths (query ``i`` attends keys ``0 … length_i − 1``,
the textbook's ``valid_lens``). Masked
keys get log weight ``−inf`` inside the blocks — in the soft pass and in the
nearest-key limit alike — so no method ever gives them weight, and lengths never form
the ``(n, m)`` matrix. A query left no key is empty (its result NaN).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from .._support.shapes import pad_rows

__all__ = ["allowed_block", "every_key_allowed", "keyless_rows", "mask_keys", "padded_mask"]


def mask_keys(scores, query_ids, key_ids, allowed):
    """``scores (n, b)`` at ``−inf`` where a query may not attend a key. ``allowed``: None
    (every key), a boolean ``(N, M)`` matrix over all queries and keys, or ``(N,)`` valid
    lengths (query ``i`` attends keys ``0 … length_i − 1``); ``query_ids (n,)``,
    ``key_ids (b,)`` index into it."""
    if allowed is None:
        return scores
    return jnp.where(allowed_block(allowed, query_ids, key_ids), scores, -jnp.inf)


def allowed_block(allowed, query_ids, key_ids):
    """The ``(n, b)`` block of a mask (see :func:`mask_keys`)."""
    if allowed.ndim == 1:
        return key_ids[None, :] < allowed[query_ids][:, None]
    if allowed.shape[0] == 1:  # the same keys for every query
        shape = (query_ids.shape[0], key_ids.shape[0])
        return jnp.broadcast_to(allowed[0, key_ids][None, :], shape)
    return allowed[query_ids[:, None], key_ids[None, :]]


def keyless_rows(allowed):
    """``(N,)``: the queries a mask leaves no key (padded keys are never allowed); ``(1,)``
    for a mask shared by every query."""
    if allowed.ndim == 1:
        return allowed <= 0
    return ~allowed.any(axis=1)


def padded_mask(allowed, rows: int, keys: int):
    """A mask padded to ``rows`` queries and ``keys`` keys (padded keys not allowed)."""
    if allowed is None:
        return None
    if allowed.ndim == 1 or allowed.shape[0] != 1:
        allowed = pad_rows(allowed, rows)
    if allowed.ndim == 2 and allowed.shape[1] < keys:
        xp = np if isinstance(allowed, np.ndarray) else jnp
        allowed = xp.pad(allowed, ((0, 0), (0, keys - allowed.shape[1])))
    return allowed


def every_key_allowed(allowed, keys: int, queries: int) -> np.ndarray:
    """``(queries,)`` on the host: the queries a concrete mask lets attend all ``keys`` keys."""
    allowed = np.asarray(allowed)
    if allowed.ndim == 1:
        return allowed >= keys
    return np.broadcast_to(np.all(allowed, axis=1), (queries,))
