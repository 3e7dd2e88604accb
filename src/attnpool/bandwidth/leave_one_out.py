"""Exact leave-one-out CV objectives of local-constant fits by the host methods.

For searches too large for all pairs: each point is a query against all points, and
its own term — exactly ``K(0) · [1, y]``, i.e. ``[1, y]`` in units of ``K(0)`` — is
subtracted from its sums, leaving the leave-one-out sums.

- :func:`sparse_cv`: compact kernels, sums over neighbourhoods
  (:mod:`attnpool.methods.sparse`);
- :func:`expansion_cv`: the Gaussian in one column, by truncated expansions
  (:mod:`attnpool.methods.fgt`). Its error is relative to each point's weight
  *including* the own term, so points left with less than
  :data:`EXPANSION_LOO_MIN_WEIGHT` are summed pair by pair.
"""

from __future__ import annotations

import numpy as np

from ..methods import fgt, sparse

#: Leave-one-out weights below this (in units of K(0)) are summed pair by pair.
EXPANSION_LOO_MIN_WEIGHT = 1e-4
#: Most pairs summed for those points before the expansion gives up (None).
EXPANSION_REDO_MAX_PAIRS = 2**27


def sparse_cv(x, y, kernel):
    """``theta (d,) -> float``: the LOO CV objective at bandwidths ``exp(theta)``, ``inf``
    where some point has no neighbour. ``x (n, d)``, ``y (n, p)``."""
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    own = _own_terms(y)

    def objective(theta):
        rest = sparse.sparse_sums(x, x, y, np.exp(-theta), kernel) - own
        if not np.all(rest[:, 0] > 1e-9):  # some point has no neighbour: undefined
            return np.inf
        return _mean_squared_error(y, rest)

    return objective


def expansion_cv(x, y, bandwidth: float) -> float | None:
    """The LOO CV objective of a Gaussian fit of one column ``x (n, 1)``, ``y (n, p)``;
    None when too many points are nearly alone for it.

    Each point's nearest key is itself, so the expansion's sums are unscaled.
    """
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    sums, _ = fgt.expansion_sums(x, x, y, 1.0 / bandwidth)
    rest = sums - _own_terms(y)
    alone = np.flatnonzero(~(rest[:, 0] >= EXPANSION_LOO_MIN_WEIGHT))
    if alone.size * x.shape[0] > EXPANSION_REDO_MAX_PAIRS:
        return None
    for rows in np.array_split(alone, -(-alone.size * x.shape[0] // 2**22) or 1):
        log_w = -0.5 * ((x[rows] - x[:, 0]) / bandwidth) ** 2  # (rows, n)
        log_w[np.arange(rows.size), rows] = -np.inf  # leave the point out
        w = np.exp(log_w - log_w.max(axis=1, keepdims=True))  # a common factor per row
        rest[rows] = np.concatenate([w.sum(axis=1, keepdims=True), w @ y], axis=1)
    return _mean_squared_error(y, rest)


def _own_terms(y):
    return np.concatenate([np.ones((y.shape[0], 1)), y], axis=1)


def _mean_squared_error(y, rest) -> float:
    return float(np.mean((y - rest[:, 1:] / rest[:, :1]) ** 2))
