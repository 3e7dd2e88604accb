"""The regressions' criteria at given bandwidths: :func:`cv_curve` and
:func:`aicc_curve` (what one plots to see the trade-off), and the checked training data
that they and :func:`attnpool.bandwidth.selection.select_bandwidth` take."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._support.hints import ArrayLike, KernelSpec
from .._support.units import objective_in_data_units, response_unit
from .._support.validation import check_points, check_values
from ..engines import numpy_search
from ..sums.local_model import model_for
from ..sums.observation_weights import (
    in_weight_unit,
    merged_rows,
    positive_rows,
    sorted_rows,
)

__all__ = ["aicc_curve", "checked_training_data", "criterion_at", "cv_curve"]


def checked_training_data(
    x: Any, y: Any, kernel: Any, var_type: Any, degree: Any, weights: Any = None
) -> Any:
    """``(x (n, d), y (n, p), model, weights)`` checked for a search: at least 3 distinct
    rows (of positive weight: rows of weight 0 are dropped; identical rows merged into
    one of their total weight; ``weights`` None or positive), in their sorted order
    (:func:`~attnpool.sums.observation_weights.sorted_rows`)."""
    x = check_points(x, "X")
    y, _ = check_values(y, x.shape[0])
    x, y, weights = positive_rows(x, y, weights)
    # identical rows are one observation of their total weight: leave-one-out leaves
    # them out together (with them, CV chose bandwidths near 0 — each row its own twin)
    x, y, weights = sorted_rows(*merged_rows(x, y, weights))
    if x.shape[0] < 3:
        of = "" if weights is None else " of positive weight"
        raise ValueError(
            f"X: bandwidth selection needs at least 3 rows; received n_samples={x.shape[0]}{of}"
        )
    model = model_for(x, kernel=kernel, var_type=var_type, degree=degree)
    return x, y, model, weights


def cv_curve(
    X: ArrayLike,
    y: ArrayLike,
    bandwidths: ArrayLike,
    *,
    kernel: KernelSpec = "gaussian",
    degree: int = 0,
    var_type: str | None = None,
    block_size: int | None = None,
    weights: ArrayLike | None = None,
) -> np.ndarray:
    """Leave-one-out error for each candidate bandwidth (what one plots to see the trade-off).

    ``bandwidths``: a sequence of scalars (the same for every column) or an array
    ``(k, d)``. Returns ``(k,)`` objectives; ``inf`` where some point has no neighbour.
    ``weights``: observation weights, as :func:`select_bandwidth` takes them.

    Parameters
    ----------
    X : array of shape (n,) or (n, d)
    y : array of shape (n,) or (n, p)
    bandwidths : array of shape (k,) or (k, d)
        Candidates: one bandwidth for every column, or one row per candidate.
    kernel : str or Kernel
    degree : {0, 1}
    var_type : str, optional
    block_size : int, optional
    weights : array of shape (n,), optional

    Returns
    -------
    ndarray of shape (k,)

    References
    ----------
    Härdle, W., Hall, P. & Marron, J. S. (1988). How far are automatically chosen
    regression smoothing parameters from their optimum? *JASA* 83(401), 86–95.

    Examples
    --------
    >>> import attnpool
    >>> data = attnpool.datasets.sine_data(n=80, seed=1)        # y = 2 sin x + x + noise
    >>> attnpool.cv_curve(data.x_train, data.y_train, [0.1, 0.3, 1.0]).round(3)
    array([0.283, 0.272, 0.569])
    """
    training = checked_training_data(X, y, kernel, var_type, degree, weights)
    return np.asarray(criterion_at(training, bandwidths, "cv", block_size))


def aicc_curve(
    X: ArrayLike,
    y: ArrayLike,
    bandwidths: ArrayLike,
    *,
    kernel: KernelSpec = "gaussian",
    degree: int = 0,
    var_type: str | None = None,
    block_size: int | None = None,
    weights: ArrayLike | None = None,
) -> np.ndarray:
    """AICc (Hurvich, Simonoff & Tsai, 1998) for each candidate bandwidth — the criterion
    ``select_bandwidth(method="aicc")`` minimises, as :func:`cv_curve` gives CV's:

    .. math:: \\log \\hat\\sigma^2 + \\frac{1 + \\operatorname{tr} H / n}
              {1 - (\\operatorname{tr} H + 2) / n}

    with ``H`` the smoother matrix; ``inf`` where the fit is not defined (``tr H ≥ n − 2``,
    or a point without a neighbour).

    Parameters
    ----------
    X, y, bandwidths, kernel, degree, var_type, block_size, weights
        As :func:`cv_curve` takes them.

    Returns
    -------
    ndarray of shape (k,)

    References
    ----------
    Hurvich, C. M., Simonoff, J. S. & Tsai, C.-L. (1998). *JRSS B* 60(2), 271–293.

    Examples
    --------
    >>> import attnpool
    >>> data = attnpool.datasets.sine_data(n=80, seed=1)        # y = 2 sin x + x + noise
    >>> attnpool.aicc_curve(data.x_train, data.y_train, [0.1, 0.3, 1.0]).round(3)
    array([-0.163, -0.279,  0.45 ])
    """
    training = checked_training_data(X, y, kernel, var_type, degree, weights)
    return np.asarray(criterion_at(training, bandwidths, "aicc", block_size))


def criterion_at(training: tuple, bandwidths, method: str, block_size: int | None) -> Any:
    """The criterion ``method`` at each candidate of ``bandwidths``, in the data's units;
    ``training``: :func:`_checked_training_data`'s ``(x, y, model, weights)``."""
    x, y, model, weights = training
    weights = in_weight_unit(weights)
    candidates = np.asarray(bandwidths, dtype=float)
    if candidates.ndim == 1:
        candidates = np.repeat(candidates[:, None], x.shape[1], axis=1)
    cont, cat = list(model.continuous), list(model.categorical)
    shaped = candidates.ndim == 2 and candidates.shape[1] == x.shape[1]
    if not (
        shaped
        and np.all(candidates[:, cont] > 0)
        and np.all((0 <= candidates[:, cat]) & (candidates[:, cat] < 1))
    ):
        raise ValueError(
            f"bandwidths: expected shape (k,) or (k, {x.shape[1]}), positive for continuous "
            f"columns and λ in (0, 1) for categorical ones; received shape "
            f"{np.asarray(bandwidths).shape} with values from {np.min(candidates):.3g} to "
            f"{np.max(candidates):.3g}"
        )
    unit = response_unit(y)  # (y ~ 1e±200: squared residuals neither overflow nor vanish)
    found = None
    if block_size is None:  # on the host where NumPy pairs serve the search (no JAX)
        found = numpy_search.criterion_curve(x, y / unit, candidates, model, method, weights)
    if found is None:
        from .compiled import criterion_curve

        found = criterion_curve(x, y / unit, candidates, model, block_size, method, weights)
    return objective_in_data_units(found, method, unit)
