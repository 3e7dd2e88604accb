"""Bandwidths of conditional densities: ``normal_reference``, or the leave-one-out
criteria ``cv_ml`` and ``cv_ls`` (:mod:`.conditional`'s docstring gives them) minimised
by the regressions' grid-then-refine search."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import kernels as _kernels
from .._support.hints import ArrayLike, Bandwidth, KernelSpec
from .._support.units import DensityUnits
from .._support.validation import check_choice, check_points
from ..bandwidth.subsample import Subsampled, subsampled_bandwidth
from ..kernels.mixed import log_pair_terms
from ..sums.observation_weights import sorted_rows
from ..sums.pair_weights import shifted_weights
from .conditional import Sides, log_conditional, sides
from .criterion_checks import (
    TIES_ADVICE,
    BlockWarnings,
    warn_at_floor,
    warn_where_copies_decide,
    warn_where_near_ties_decide,
    warn_where_tails_decide,
)

if TYPE_CHECKING:
    from ..bandwidth.search import BandwidthSelection

__all__ = ["CONDITIONAL_SELECTORS", "conditional_criterion", "select_conditional_bandwidth"]

#: How :func:`select_conditional_bandwidth` chooses.
CONDITIONAL_SELECTORS = ("cv_ml", "cv_ls", "normal_reference")


def _criterion(sample: Sides, method: str, counts: np.ndarray | None = None) -> float:
    """:func:`conditional_criterion` of the checked ``sample``; ``counts (n,)``: each row
    standing for that many copies of itself, left out together (None: ones)."""
    x, y, _, (cy, _) = sample
    if method == "cv_ml":
        rows = np.arange(x.shape[0])
        values = log_conditional(sample, x, y, left_out=rows, weights=counts)
        if not np.all(np.isfinite(values)):
            return math.inf
        return float(-np.average(values, weights=counts))
    if cy.continuous and not _kernels.is_gaussian(cy.kernel):
        raise ValueError(
            f"kernel: cv_ls integrates f̂² by the kernel's convolution, the Gaussian's; "
            f"received {cy.kernel.name!r} (use cv_ml)"
        )
    return _least_squares(sample, counts)


def _least_squares(sample: Sides, counts: np.ndarray | None) -> float:
    """The conditional ``cv_ls`` criterion (module docstring), rows of ``x``'s weights
    shifted by their largest (each row's ratio is scale-free); ``counts`` as
    :func:`_criterion`'s."""
    x, y, (cx, hx), (cy, hy) = sample
    own_rows = np.arange(x.shape[0])
    log_w = log_pair_terms(x, x, hx, cx, "density")
    w, _, empty = shifted_weights(log_w, left_out=own_rows, weights=counts)
    if np.any(empty):
        return math.inf
    log_c = log_pair_terms(y, y, hy, cy, "convolution")
    shift = np.max(log_c)
    square = np.einsum("lj,lj->l", w @ np.exp(log_c - shift), w) * math.exp(shift)
    total = w.sum(axis=1)
    own = np.einsum("lj,lj->l", w, np.exp(log_pair_terms(y, y, hy, cy, "density")))
    return float(np.average(square / total**2 - 2.0 * own / total, weights=counts))


def conditional_criterion(
    x: ArrayLike,
    y: ArrayLike,
    bandwidth: Bandwidth,
    y_bandwidth: Bandwidth,
    *,
    method: str = "cv_ml",
    kernel: KernelSpec = "gaussian",
    x_var_type: str | None = None,
    y_var_type: str | None = None,
) -> float:
    """The criterion :func:`select_conditional_bandwidth` minimises: the mean negative
    leave-one-out log conditional density (``cv_ml``) or the least-squares criterion
    (``cv_ls``, the Gaussian for continuous columns)."""
    return _criterion(sides(x, y, x_var_type, y_var_type, kernel, bandwidth, y_bandwidth), method)


def select_conditional_bandwidth(
    x: ArrayLike,
    y: ArrayLike,
    *,
    method: str = "cv_ml",
    kernel: KernelSpec = "gaussian",
    x_var_type: str | None = None,
    y_var_type: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    subsample: Subsampled | None = None,
) -> BandwidthSelection:
    """Bandwidths of :math:`\\hat f(y \\mid x)`: a
    :class:`~attnpool.bandwidth.BandwidthSelection` whose ``bandwidth`` holds ``x``'s
    columns, then ``y``'s. ``"normal_reference"``: statsmodels' ``1.06 σ n^(−1/(4+q))``
    over all ``q`` columns (``λ = 0.1`` for categorical ones); ``"cv_ml"``/``"cv_ls"``:
    the criteria of :func:`conditional_criterion`, minimised by the regressions'
    grid-then-refine search (log-bandwidths, logits of ``λ``); ``progress``: called
    ``(done, total)`` as the grid and the refinement finish.

    Parameters
    ----------
    x : array of shape (n,) or (n, d)
    y : array of shape (n,) or (n, e)
    method : {"cv_ml", "cv_ls", "normal_reference"}
    kernel : str or Kernel
    x_var_type, y_var_type : str, optional
    progress : callable ``(done, total)``, optional
    subsample : Subsampled, optional
        Select on blocks of rows and scale up, as statsmodels' ``efficient=True``
        (:mod:`attnpool.bandwidth.subsample`): the scaling counts the continuous columns of
        ``x`` and ``y`` together, as statsmodels' conditional estimator does.

    Returns
    -------
    BandwidthSelection

    References
    ----------
    Hall, P., Racine, J. & Li, Q. (2004). *JASA* 99(468), 1015–1026.

    Examples
    --------
    >>> import attnpool
    >>> data = attnpool.datasets.sine_data(n=80, seed=1)        # y = 2 sin x + x + noise
    >>> found = attnpool.select_conditional_bandwidth(data.x_train, data.y_train)
    >>> found.bandwidth.round(3)                                 # x's, then y's
    array([0.215, 0.36 ])
    """
    from ..bandwidth.search import BandwidthSelection
    from ..sums.local_model import model_for
    from .selection import NO_GRID, normal_reference

    check_choice(method, "method", CONDITIONAL_SELECTORS)
    x = np.asarray(check_points(x, "x"), np.float64)
    y = np.asarray(check_points(y, "y"), np.float64)
    if x.shape[0] < 3 or y.shape[0] != x.shape[0]:
        raise ValueError(
            f"x, y: bandwidth selection needs at least 3 rows, as many of y as of x; "
            f"received n_samples={x.shape[0]} and {y.shape[0]}"
        )
    both = np.hstack([x, y])
    var_type = (x_var_type or "c" * x.shape[1]) + (y_var_type or "c" * y.shape[1])
    model = model_for(both, kernel=kernel, var_type=var_type)
    for name, values, types in (("x", x, var_type[: x.shape[1]]), ("y", y, var_type[x.shape[1] :])):
        constant = [j for j, kind in enumerate(types) if kind == "c" and np.ptp(values[:, j]) == 0]
        if constant:
            raise ValueError(f"{name}: column(s) {constant} are constant; a bandwidth needs spread")
    if method == "normal_reference" and subsample is None:
        return BandwidthSelection(normal_reference(both, model), math.nan, method, NO_GRID)
    d = x.shape[1]
    if subsample is not None:
        blocks = BlockWarnings()  # (said once; heavy tails of the whole sample, below)

        def on_rows(rows: np.ndarray) -> np.ndarray:
            with blocks.kept():
                found = select_conditional_bandwidth(
                    x[rows], y[rows], method=method, kernel=kernel, x_var_type=x_var_type,
                    y_var_type=y_var_type,
                )  # fmt: skip
            return np.asarray(found.bandwidth)

        h = subsampled_bandwidth(on_rows, both, var_type, subsample)
        blocks.say()
        found = BandwidthSelection(h, math.nan, method, NO_GRID)
        if method == "cv_ml":
            _warn_where_responses_tails_decide(found, y, d, var_type, kernel)
        return found

    found = _searched(x, y, model, method, progress)

    def merged_search(merged: np.ndarray, *, weights: np.ndarray, **_: Any) -> BandwidthSelection:
        return _searched(merged[:, :d], merged[:, d:], model, method, counts=weights)

    # copies (a bootstrap resample) may take the search to its floor: their warning then
    # names the bandwidth with each row's copies left out together
    if not warn_where_copies_decide(found, (both, None), model, kernel, merged_search,
                                    COPIES_ADVICE, at_floor=True):  # fmt: skip
        warn_at_floor(found, both, model, TIES_ADVICE)
    warn_where_near_ties_decide(found, both, model)
    if method == "cv_ml":
        _warn_where_responses_tails_decide(found, y, d, var_type, kernel)
    return found


#: What to do where rows repeat as copies: the bandwidths their merged rows select.
COPIES_ADVICE = (
    "Where the repeats are copies of one observation (a bootstrap resample, data given "
    "twice), pass those (x's columns, then y's) as bandwidth= and y_bandwidth="
)


def _searched(
    x: np.ndarray, y: np.ndarray, model: Any, method: str,
    progress: Callable[[int, int], None] | None = None, counts: np.ndarray | None = None,
) -> BandwidthSelection:  # fmt: skip
    """The grid-then-refine search of ``method``'s criterion over ``x``'s columns, then
    ``y``'s (``model``: their var types and kernel), ``counts`` as :func:`_criterion`'s;
    at unit scale (:class:`~attnpool._support.units.DensityUnits`, ``y`` a density's), the
    rows in their sorted order (they decide, not their order)."""
    from .selection import search

    d = x.shape[1]
    both = np.hstack([x, y])
    units = DensityUnits.of(both, model.continuous, range(d, both.shape[1]))
    both = units.apply(both)
    x_rows, y_rows, counts = sorted_rows(both[:, :d], both[:, d:], counts)
    x_type, y_type = model.var_type[:d], model.var_type[d:]

    def objective(h: Any) -> float:
        sample = sides(x_rows, y_rows, x_type, y_type, model.kernel, h[:d], h[d:])
        return _criterion(sample, method, counts)

    return search(objective, np.hstack([x_rows, y_rows]), model, method, progress, units=units,
                  weights=counts)  # fmt: skip


def _warn_where_responses_tails_decide(
    found: BandwidthSelection, y: np.ndarray, d: int, var_type: str, kernel: KernelSpec
) -> None:
    """:func:`~.criterion_checks.warn_where_tails_decide` on ``y``'s columns (the
    bandwidths after ``x``'s ``d``): a large ``x`` bandwidth may be a column of no effect."""
    from ..sums.local_model import model_for

    y_model = model_for(y, kernel=kernel, var_type=var_type[d:])
    warn_where_tails_decide(found._replace(bandwidth=found.bandwidth[d:]), (y, None), y_model,
                            kernel, side="y ")  # fmt: skip
