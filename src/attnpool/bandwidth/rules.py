"""Rules of thumb for bandwidths, per continuous column.

- ``"scott"``: ``1.059 σ_j n^(−1/(4+q))`` (statsmodels' ``normal_reference``), ``q``
  the number of continuous columns;
- ``"silverman"``: ``0.9 min(σ_j, IQR_j/1.349) n^(−1/(4+q))``;

both Gaussian-kernel rules, converted to other kernels by the ratio of canonical
bandwidths ``δ(K) = (R(K) / μ₂(K)²)^(1/5)`` (Marron & Nolan, 1988). Categorical
columns start at ``λ = 0.1`` (:data:`CATEGORICAL_START`).
"""

from __future__ import annotations

import numpy as np

from .. import kernels
from .._support.hints import ArrayLike, KernelSpec
from .._support.units import power_of_two_above
from .._support.validation import check_choice, check_points
from ..sums.local_model import model_for
from ..sums.observation_weights import check_weights
from .peer_rules import PEER_RULES, peer_rule

CATEGORICAL_START = 0.1
#: Every rule :func:`rule_of_thumb` takes: attnpool's and the peers' (:mod:`.peer_rules`).
RULES = ("scott", "silverman", *PEER_RULES)
_GAUSSIAN_CANONICAL = (1 / (2 * np.sqrt(np.pi))) ** 0.2


def rule_of_thumb(
    x: ArrayLike,
    *,
    method: str = "scott",
    kernel: KernelSpec = "gaussian",
    var_type: str | None = None,
    weights: ArrayLike | None = None,
) -> np.ndarray:
    """Scott's or Silverman's bandwidth for each column of ``x (n, d)``; with positive
    observation ``weights (n,)``, those of the sample that repeats row ``i`` ``w_i`` times
    (``n = Σ w``, weighted spread and quartiles).

    Parameters
    ----------
    x : array of shape (n,) or (n, d)
    method : {"scott", "silverman"} or a peer's rule
        attnpool's rules, or a name of :data:`attnpool.bandwidth.peer_rules.PEER_RULES`
        (R's ``"bw.nrd0"``, SciPy's ``"scipy.scott"``, scikit-learn's ``"sklearn.scott"``,
        statsmodels' ``"statsmodels.normal_reference"``, …): that peer's number.
    kernel : str or Kernel
        attnpool's rules are the Gaussian's, converted by the kernels' canonical
        bandwidths; a peer's rule is converted as the peer does.
    var_type : str, optional
        Categorical columns get their ``λ`` rule.
    weights : array of shape (n,), optional

    Returns
    -------
    ndarray of shape (d,)

    References
    ----------
    Scott, D. W. (1992). *Multivariate Density Estimation*. Wiley. Silverman, B. W.
    (1986). *Density Estimation for Statistics and Data Analysis*. Chapman & Hall.
    Marron, J. S. & Nolan, D. (1988). Canonical kernels for density estimation.
    *Statistics & Probability Letters* 7(3), 195–199.

    Examples
    --------
    >>> import attnpool
    >>> data = attnpool.datasets.sine_data(n=80, seed=1)        # y = 2 sin x + x + noise
    >>> attnpool.rule_of_thumb(data.x_train).round(3)
    array([0.639])
    >>> attnpool.rule_of_thumb(data.x_train, method="silverman").round(3)
    array([0.543])
    """
    check_choice(method, "method", RULES)
    if method in PEER_RULES:
        if weights is not None or (var_type is not None and set(var_type) != {"c"}):
            raise ValueError(
                f"method: {method!r} is a peer's rule for unweighted continuous columns; "
                f"received weights={'given' if weights is not None else None} and "
                f"var_type={var_type!r} (use 'scott' or 'silverman')"
            )
        return peer_rule(x, method, kernel)
    x = np.asarray(check_points(x, "x", min_rows=1), dtype=float)
    model = model_for(x, kernel=kernel, var_type=var_type)
    record: kernels.Kernel = model.kernel
    _check_rule_kernel(record)
    w = None if weights is None else np.asarray(check_weights(weights, x.shape[0]), float)
    n, q = observation_count(x.shape[0], w), len(model.continuous)
    bandwidth = np.full(x.shape[1], CATEGORICAL_START)
    if q == 0:
        return bandwidth
    columns, unit = in_unit(x[:, list(model.continuous)])
    sigma = spread(columns, w) if n > 1 and x.shape[0] > 1 else np.zeros(q)
    if method == "silverman":
        iqr = np.subtract(*percentiles(columns, [75, 25], w)) / 1.349
        sigma = np.where(iqr > 0, np.minimum(sigma, iqr), sigma)
    sigma = sigma * unit
    if np.any(sigma <= 0):
        bad = [model.continuous[j] for j in np.flatnonzero(sigma <= 0)]
        raise ValueError(f"x: column(s) {bad} are constant; a bandwidth rule needs spread")
    bandwidth[list(model.continuous)] = rule_from_spread(sigma, n, record, method=method)
    return bandwidth


def observation_count(rows: int, weights: np.ndarray | None) -> float:
    """``n`` of a rule of thumb: the ``rows``, or ``Σ w`` of observation ``weights`` (row
    ``i`` counted as ``w_i`` observations), refused where that is below two or beyond the
    float range."""
    if weights is None:
        return float(rows)
    with np.errstate(over="ignore"):
        n = float(np.sum(weights))
    if not 2 <= n < np.inf:
        beyond = "less than two" if n < 2 else "beyond the float range"
        raise ValueError(
            f"weights: a rule of thumb counts row i as w_i observations (n = Σ w); received "
            f"weights summing to {n:.4g}, which is {beyond} (scale relative weights by the "
            "number of rows)"
        )
    return n


def search_start(
    x: np.ndarray,
    *,
    method: str = "scott",
    kernel: KernelSpec = "gaussian",
    var_type: str | None = None,
    weights: np.ndarray | None = None,
) -> np.ndarray:
    """The rule of thumb that centres a bandwidth search's grid: :func:`rule_of_thumb`
    with the ``weights`` taken as relative (scaled to sum to the number of rows). CV and
    AICc do not change when every weight is multiplied by one number, so neither does
    their search: weights summing to 1 are searched, and weights summing to 10²⁰ do not
    move the grid to where the criterion is the nearest neighbours' limit."""
    if weights is not None:
        relative = np.asarray(weights, np.float64) / np.max(weights)  # (no sum overflows)
        weights = relative * (relative.size / np.sum(relative))
    return rule_of_thumb(x, method=method, kernel=kernel, var_type=var_type, weights=weights)


def in_unit(columns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(columns about their midranges in power-of-two units, the units (q,))``: no
    square of a spread overflows or vanishes (``x ~ 1e±160``)."""
    centre = columns.min(axis=0) / 2 + columns.max(axis=0) / 2
    unit = power_of_two_above(np.max(np.abs(columns - centre), axis=0))
    return (columns - centre) / unit, unit


def spread(columns: np.ndarray, weights: np.ndarray | None) -> np.ndarray:
    """Each column's sample standard deviation (``ddof=1``), rows counted ``weights`` times."""
    if weights is None:
        return np.asarray(columns.std(axis=0, ddof=1))
    total = np.sum(weights)
    mean = weights @ columns / total
    return np.asarray(np.sqrt(weights @ (columns - mean) ** 2 / (total - 1)))


def percentiles(columns: np.ndarray, q: list[float], weights: np.ndarray | None) -> np.ndarray:
    """``(len(q), d)`` percentiles of each column (NumPy's linear interpolation), rows
    counted ``weights`` times: those of the repeated sample for integer weights."""
    if weights is None:
        return np.asarray(np.percentile(columns, q, axis=0))
    result = np.empty((len(q), columns.shape[1]))
    positions = np.asarray(q, float) / 100 * (np.sum(weights) - 1)
    for j in range(columns.shape[1]):
        order = np.argsort(columns[:, j], kind="stable")
        values, ends = columns[order, j], np.cumsum(weights[order])  # copies 0 … ends − 1
        below = np.floor(positions)
        low = values[np.minimum(np.searchsorted(ends, below, side="right"), len(values) - 1)]
        high = values[np.minimum(np.searchsorted(ends, below + 1, side="right"), len(values) - 1)]
        result[:, j] = low + (positions - below) * (high - low)
    return result


def _check_rule_kernel(record: kernels.Kernel) -> None:
    if not (record.variance and np.isfinite(record.variance) and record.roughness):
        raise ValueError(
            f"kernel: rules of thumb need a kernel with finite variance and roughness; "
            f"{record.name!r} has variance {record.variance}"
        )


def rule_from_spread(
    sigma: ArrayLike, n: float, kernel: KernelSpec, *, method: str = "scott"
) -> np.ndarray:
    """Scott's (``1.059 σ n^(−1/(4+d))``) or Silverman's (``0.9 …``) bandwidths from the
    columns' spreads ``sigma (d,)``, converted to ``kernel`` by its canonical bandwidth."""
    record = kernels.get(kernel)
    _check_rule_kernel(record)
    roughness, variance = float(record.roughness or 0.0), float(record.variance or 0.0)
    ratio = (roughness / variance**2) ** 0.2 / _GAUSSIAN_CANONICAL
    factor = 1.059 if method == "scott" else 0.9
    sigma = np.asarray(sigma, dtype=float)
    return np.asarray(factor * sigma * n ** (-1.0 / (4 + sigma.shape[0])) * ratio)
