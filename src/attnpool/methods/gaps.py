"""Sorted keys in runs far apart — a cluster on ``[0, 1]`` and a point at ``10⁹`` — laid
out one after the other with the gaps between them closed, for the ``fgt`` expansions'
table of boxes (:mod:`.fgt`): a window about a query holds the same keys at the same
distances, and the table spans the runs, not the empty range between them."""

from __future__ import annotations

import numpy as np

__all__ = ["closed_gaps"]


def closed_gaps(k, q, width: float, span: float, raw=None):
    """Sorted scaled keys ``k`` and queries ``q`` with every gap between neighbouring keys
    wider than ``span`` closed to ``span``: each run of keys without such a gap (a
    segment) laid out after the one before it, each query with the segment of its
    nearest key. A window of ``2·half + 1`` boxes of ``width`` about a query within
    ``half`` boxes of its nearest key (``span = (2·half + 4)·width``) still holds exactly
    the keys it held, at the same distances, and a table for 30 keys on ``[0, 1]`` and
    one at ``10⁹`` no longer spans the ``10⁹`` boxes between them. ``raw``: ``(queries,
    keys, scale)`` unscaled, in the same order: each segment's coordinates are then taken
    about its own midrange before scaling (a cluster far from the others keeps the digits
    that centring on the whole sample's midrange took). Data without such gaps are
    returned as they are."""
    wide = np.diff(k) > span
    if not wide.any():
        return k, q
    key_segment = np.r_[0, np.cumsum(wide)]
    right = np.clip(np.searchsorted(k, q), 0, k.shape[0] - 1)
    left = np.maximum(right - 1, 0)
    nearest = np.where(np.abs(q - k[left]) <= np.abs(q - k[right]), left, right)
    query_segment = key_segment[nearest]
    first = np.r_[0, np.flatnonzero(wide) + 1]
    last = np.r_[first[1:] - 1, k.shape[0] - 1]
    if raw is None:
        local_k, local_q = k - k[first][key_segment], q - k[first][query_segment]
    else:
        raw_q, raw_k, scale = raw
        origins = raw_k[first] / 2 + raw_k[last] / 2
        local_k = (raw_k - origins[key_segment]) * scale
        local_q = (raw_q - origins[query_segment]) * scale
    below, above = local_k[first], local_k[last]
    starts = np.r_[0.0, np.cumsum(above[:-1] + span - below[1:])]
    return local_k + starts[key_segment], local_q + starts[query_segment]
