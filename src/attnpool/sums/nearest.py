"""The nearest-key limit on the host: what pooling tends to as ``h → 0``.

As the bandwidth shrinks, every weight but the closest keys' vanishes against theirs,
so a query's pool tends to the mean value of its nearest keys (ties averaged, in
proportion to their observation weights): the pooling state at zero temperature. It
is what a row gets whose weights all vanished — every key beyond a compact kernel's
support, or distances beyond the float range — and is computed here from differences
scaled by ``min h / h_j ≤ 1``, which cannot overflow.
"""

from __future__ import annotations

import numpy as np

from ..kernels.norms import squared_norm
from .local_model import LocalModel

__all__ = ["column_units", "nearest_mean"]


def column_units(h: np.ndarray, model: LocalModel) -> np.ndarray:
    """Each column's unit: its bandwidth for a continuous column, 1 for a categorical
    one (its codes' differences)."""
    return np.where(_continuous(model), h, 1.0)


def _continuous(model: LocalModel) -> np.ndarray:
    return np.array([t == "c" for t in model.var_type])


def nearest_mean(queries, keys, y, h, model: LocalModel, w=None):
    """``(k, p)``: the mean of ``y (m, p)`` over each query's nearest keys (ties averaged,
    in proportion to the observation weights ``w`` if given), from differences weighted
    by ``min h / h_j ≤ 1`` over the continuous columns (a categorical column's codes as
    they are, as the compiled engines measure it), in the kernel's norm."""
    continuous = _continuous(model)
    smallest = np.min(h[continuous]) if continuous.any() else 1.0
    factor = np.where(continuous, smallest / column_units(h, model), 1.0)
    differences = [(queries[:, j, None] - keys[None, :, j]) * factor[j] for j in range(len(h))]
    # each row in units of its largest difference: squares of 1e200 would overflow
    largest = np.max([np.max(np.abs(u), axis=1) for u in differences], axis=0)
    largest = np.where((largest > 0) & np.isfinite(largest), largest, 1.0)[:, None]
    r2 = squared_norm([u / largest for u in differences], model.kernel)
    closest = (r2 == r2.min(axis=1, keepdims=True)).astype(float)
    if w is not None:
        closest *= w[None, :]
    return closest @ y / closest.sum(axis=1, keepdims=True)
