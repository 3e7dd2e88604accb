"""The resolution of recorded data: the smallest bandwidth a density search considers.

Values recorded to a resolution — waiting times in whole minutes, durations to a tenth
— repeat. A leave-one-out criterion then sees each point's tied twins at distance 0,
``K(0)/h`` each, and grows (likelihood) or falls (least squares) without end as
``h → 0``; a plug-in's fixed point likewise finds a root at the spikes. Below the
spacing of the recorded values a density resolves nothing the data can show, so the
density searches keep each continuous column's bandwidth at or above half its
resolution — the smallest gap between distinct values — where that column has ties.
A column without ties is left free (its smallest gap is no resolution, and its
criterion has no such limit). Values on the lattice of their resolution
(:func:`on_lattice`) were recorded to it; ties elsewhere are copies of one observation
(a bootstrap resample), which the density searches name
(:func:`attnpool.select_density_bandwidth`).

>>> import numpy as np
>>> resolution(np.array([[1.0], [2.0], [2.0], [4.0]]))
array([1.])
>>> resolution(np.array([[0.3], [1.7], [2.2]]))
array([0.])
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "FLOOR_REACHED",
    "RESOLUTION_SHARE",
    "TiedDataWarning",
    "bandwidth_floor",
    "on_lattice",
    "resolution",
]

#: The share of a column's resolution below which its bandwidth is not searched.
RESOLUTION_SHARE = 0.5
#: A searched bandwidth within this factor of its column's floor has reached it.
FLOOR_REACHED = 1.001


def resolution(x: np.ndarray) -> np.ndarray:
    """``(d,)``: each column of ``x (n, d)``'s smallest gap between distinct values where
    some value repeats, else 0."""
    x = np.asarray(x, np.float64)
    found = np.zeros(x.shape[1])
    for j in range(x.shape[1]):
        values = np.sort(x[:, j])
        gaps = np.diff(values)
        if gaps.size and np.any(gaps == 0) and np.any(gaps > 0):
            found[j] = float(np.min(gaps[gaps > 0]))
    return found


def on_lattice(column: np.ndarray) -> bool:
    """Whether the values of ``column (n,)`` are whole multiples of its :func:`resolution`
    apart (to rounding): values recorded to a precision, whose ties are distinct
    observations recorded alike — not the copies of a resample, which repeat values
    that lie anywhere. False where no value repeats."""
    found = resolution(np.asarray(column, np.float64)[:, None])[0]
    if found == 0:
        return False
    values = np.unique(np.asarray(column, np.float64))
    steps = (values - values[0]) / found
    return bool(np.allclose(steps, np.round(steps), rtol=1e-9, atol=1e-6))


def bandwidth_floor(x: np.ndarray) -> np.ndarray:
    """``(d,)``: the smallest bandwidth searched in each column (:data:`RESOLUTION_SHARE`
    of its :func:`resolution`; 0 where no value repeats)."""
    return RESOLUTION_SHARE * resolution(x)


class TiedDataWarning(UserWarning):
    """A density search stopped at the floor that tied values set
    (this module): its criterion has no optimum above it; or rows that repeat exactly,
    at values on no lattice of a resolution (copies: a bootstrap resample, data given
    twice), set its cross-validated bandwidth — each predicted by its own copies.

    Examples
    --------
    >>> import warnings, numpy as np, attnpool
    >>> rng = np.random.default_rng(3)
    >>> x = np.r_[np.zeros(40), rng.integers(-30, 30, 60) * 1.2]   # many ties
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     _ = attnpool.select_density_bandwidth(x, method="cv_ls")
    >>> caught[0].category.__name__
    'TiedDataWarning'

    References
    ----------
    Silverman, B. W. (1986). *Density Estimation for Statistics and Data Analysis*,
    section 3.4.3 (least-squares cross-validation degenerates on discretised data).
    """
