"""Bandwidth selection on subsamples, as statsmodels' ``EstimatorSettings(efficient=True)``
and R np's ``bwscaling`` do it: the selector runs on blocks of ``n_sub`` rows, each
block's bandwidths are turned into scale factors of the block's spread and size, and the
median (or mean) factor is applied to the whole sample's spread and size:

.. math:: c_b = h_b / (s_b\\, n_{sub}^{-1/(q+4)}), \\qquad
          h = \\operatorname{median}_b(c_b)\\, s\\, n^{-1/(q+4)}

for a continuous column (``s`` the smaller of the standard deviation and the
interquartile range over 1.349, ``q`` the number of continuous columns), and
``n^{-2/(q+4)}`` in place of ``s n^{-1/(q+4)}`` for a categorical one's ``λ``. The cost
is that of the blocks: ``n / n_sub`` searches of ``n_sub`` rows instead of one of ``n``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .._support.validation import check_positive_int

__all__ = ["Subsampled", "subsampled_bandwidth"]


@dataclass(frozen=True)
class Subsampled:
    """How to select on subsamples (statsmodels' ``EstimatorSettings`` of the same names).

    Parameters
    ----------
    n_sub : int
        Rows per block.
    n_res : int
        Blocks drawn at random, with ``randomize`` (else the sample is cut into
        consecutive blocks, the last one shorter, as statsmodels cuts it).
    randomize : bool
        Random blocks (drawn with ``seed``) instead of consecutive ones.
    return_median : bool
        The median of the blocks' factors (else their mean).
    return_only_bw : bool
        The median of the blocks' bandwidths themselves, unscaled.
    seed : int, optional
        The random blocks' draws.

    Examples
    --------
    >>> import numpy as np, attnpool
    >>> from attnpool.bandwidth.subsample import Subsampled
    >>> x = np.random.default_rng(0).normal(size=(400, 1))
    >>> attnpool.select_density_bandwidth(x, subsample=Subsampled(n_sub=100)).bandwidth.round(3)
    array([0.27])

    References
    ----------
    Racine, J. S. (2019). *The np Package*, "bwscaling" (the scale factors);
    statsmodels' ``EstimatorSettings(efficient=True)``.
    """

    n_sub: int = 50
    n_res: int = 25
    randomize: bool = False
    return_median: bool = True
    return_only_bw: bool = False
    seed: int | None = None


def subsampled_bandwidth(
    select: Callable[[np.ndarray], np.ndarray],
    data: np.ndarray,
    var_type: str,
    settings: Subsampled,
) -> np.ndarray:
    """The bandwidths ``(q,)`` of ``data (n, q)`` (columns of ``var_type``) from
    ``select(rows)``, the selector's bandwidths on the rows ``rows`` of ``data``."""
    from scipy.stats import mstats

    n_sub = check_positive_int(settings.n_sub, "n_sub", allow_none=False)
    n = data.shape[0]
    if n_sub < 3 or n_sub > n:
        raise ValueError(f"n_sub: expected from 3 to the {n} rows; received {n_sub}")
    if settings.randomize:
        rng = np.random.default_rng(settings.seed)
        n_res = check_positive_int(settings.n_res, "n_res", allow_none=False)
        blocks = [np.sort(rng.permutation(n)[:n_sub]) for _ in range(n_res)]
    else:
        blocks = [np.arange(start, min(start + n_sub, n)) for start in range(0, n, n_sub)]
        if n % n_sub and n % n_sub < 3:  # statsmodels' last block, too short to select on
            blocks = blocks[:-1]
    continuous = np.array([t == "c" for t in var_type])
    q = int(continuous.sum())

    def dispersion(part: np.ndarray) -> np.ndarray:
        quartiles = mstats.mquantiles(part, [0.25, 0.75], axis=0)
        return np.asarray(np.minimum(part.std(axis=0), (quartiles[1] - quartiles[0]) / 1.349))

    bandwidths = np.array([select(rows) for rows in blocks])
    if settings.return_only_bw:
        return np.asarray(np.median(bandwidths, axis=0))
    factors = np.where(continuous, 1.0, n_sub ** (-2.0 / (q + 4)))
    scales = np.array([
        bandwidths[b] / np.where(continuous, dispersion(data[rows]) * n_sub ** (-1.0 / (q + 4)),
                                 factors)
        for b, rows in enumerate(blocks)
    ])  # fmt: skip
    scale = np.median(scales, axis=0) if settings.return_median else np.mean(scales, axis=0)
    whole = np.where(continuous, dispersion(data) * n ** (-1.0 / (q + 4)), n ** (-2.0 / (q + 4)))
    return np.asarray(scale * whole)
