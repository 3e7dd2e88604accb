"""The LOWESS iterations on sorted data: fits, ``delta``'s skipped points, robustness.

Cleveland's (1979) procedure, as both peers run it: fit a local line at each point
(:meth:`.rules.Rules.fit`), reweight the keys by the bisquare of their residuals, and
fit again, ``iterations`` times. With ``delta > 0`` the line is fitted only at a subset
of the points, each the last point within ``delta`` of the one fitted before it, and the
points between are linearly interpolated; ties of a fitted point take its value. The
subset depends on ``x`` and ``delta`` only, so it is found once (:func:`fit_schedule`).
"""

from __future__ import annotations

import numpy as np

from .rules import Rules
from .windows import tie_runs

__all__ = ["fit_schedule", "interpolated", "smooth"]


def fit_schedule(keys: np.ndarray, delta: float, rules: Rules) -> np.ndarray:
    """Indices of the sorted ``keys`` where a line is fitted, in increasing order:
    after a fit at ``i``, the next is at the last key within ``delta`` of ``keys[i]``
    (at least the next key that is not a tie of it), and the last key is always
    fitted. With ``delta = 0`` that is the first key of every run of ties. Where no key
    lies beyond ``delta``, statsmodels' loop fits the last key but one before the last
    (:attr:`.rules.Rules.last_but`), R's the last only."""
    if delta == 0.0:
        return tie_runs(keys)
    n = keys.shape[0]
    beyond = np.searchsorted(keys, keys + delta, side="right")  # first key past the cut
    beyond[beyond == n] = n - rules.last_but
    tie_end = np.searchsorted(keys, keys, side="right") - 1  # last tie of each key
    fitted = []
    i = 0
    while True:
        fitted.append(i)
        last = int(tie_end[i])
        if last >= n - 1:
            return np.asarray(fitted, dtype=np.int64)
        i = max(int(beyond[i]) - 1, last + 1)


def interpolated(keys: np.ndarray, fitted: np.ndarray, fits: np.ndarray) -> np.ndarray:
    """The fits at every key: the fitted keys' own, their ties', and between two fitted
    keys ``a`` and ``b`` the line ``fit_a + t · (fit_b − fit_a)``,
    ``t = (x − x_a) / (x_b − x_a)`` (the peers' ``t · fit_b + (1 − t) · fit_a`` but for
    rounding, and exact where the two fits are equal)."""
    n = keys.shape[0]
    out = np.empty(n)
    out[fitted] = fits
    owner = np.searchsorted(fitted, np.arange(n), side="right") - 1  # fitted at or before
    previous = fitted[owner]
    rest = np.flatnonzero(np.arange(n) != previous)
    if rest.size:
        a = previous[rest]
        b = fitted[np.minimum(owner[rest] + 1, fitted.shape[0] - 1)]
        tied = keys[rest] == keys[a]
        with np.errstate(divide="ignore", invalid="ignore"):
            t = (keys[rest] - keys[a]) / (keys[b] - keys[a])
            line = out[a] + t * (out[b] - out[a])
        out[rest] = np.where(tied, out[a], line)
    return out


def smooth(
    rules: Rules,
    keys: np.ndarray,
    values: np.ndarray,
    frac: float,
    iterations: int,
    delta: float = 0.0,
    queries: np.ndarray | None = None,
) -> np.ndarray:
    """LOWESS fits at the sorted ``keys`` (or, after the robustness iterations on the
    data, at sorted ``queries``, a row the rules cannot fit there being NaN).

    Parameters
    ----------
    rules : Rules
        The peer whose rules are followed.
    keys, values : ndarray, shape (n,)
        Sorted finite ``x`` and their ``y``.
    frac : float
        Share of the keys in each window.
    iterations : int
        Robustness iterations after the first fit.
    delta : float
        Distance within which fits are interpolated rather than computed.
    queries : ndarray, shape (m,), optional
        Sorted points to fit at once the weights are settled.

    Returns
    -------
    ndarray
        Float64 fits, shape (n,) or (m,).
    """
    n = keys.shape[0]
    if n < 2:
        return values.copy() if queries is None else np.full(queries.shape[0], np.nan)
    unit = rules.unit(keys)  # (exact: the same windows, weights and fits)
    if unit != 1.0:
        keys, delta = keys / unit, delta / unit
        queries = None if queries is None else queries / unit
    k = rules.neighbours(frac, n)
    fitted = fit_schedule(keys, delta, rules)
    robustness = np.ones(n)
    passes = iterations + 1 if queries is None else iterations
    fits = values
    for step in range(passes):
        at_fitted = rules.fit(keys, values, robustness, keys[fitted], values[fitted], k)
        fits = interpolated(keys, fitted, at_fitted)
        if step == passes - 1 and queries is None:
            break
        weights = rules.robustness(values, fits)
        if weights is None:
            break
        robustness = weights
    if queries is None:
        return fits
    return rules.fit(keys, values, robustness, queries, np.full(queries.shape[0], np.nan), k)
