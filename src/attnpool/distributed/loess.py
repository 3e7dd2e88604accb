"""``Loess`` fitted to Dask arrays: every sum taken where its rows are.

The fit is the one in memory (:mod:`attnpool.smoothers.loess_fit`) with each of its
steps done over the blocks: the sums over the operator's rows by
:mod:`.row_sums`, the radii by :mod:`.neighbourhoods`, the medians of the robustness
weights and pseudovalues and the predictors' trimmed scales by
:mod:`.order_statistics` (exactly, by rounds of counting), and the statistics as sums
over rows. The numbers equal those of the fit in memory but for the order of additions;
``δ₂``'s estimate uses the same sign vectors, indexed by row. Only scalars and the
bounding boxes of blocks reach the client; the per-row results stay in the workers
(persisted), as Dask arrays with the input's row blocks.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .._support.optional import require
from .._support.units import response_unit
from ..smoothers.loess_fit import (
    LoessResult,
    prior_exponent,
    probe_signs,
    pseudo_step,
    robustness_weights,
    two_delta,
)
from ..smoothers.neighbourhoods import check_several_points
from ..smoothers.operator_rows import Columns
from .order_statistics import median, tree_sum
from .row_sums import (
    Spread,
    distributed_sums,
    gathered,
    group_radii,
    group_rows,
    keys_of,
    ones_of,
    query_groups,
    training_parts,
)

dask = require("dask", "Dask support (attnpool.distributed)")
import dask.array as da  # noqa: E402
from dask import delayed  # noqa: E402

__all__ = ["Training", "distributed_loess", "distributed_predict", "gathered"]


@dataclass
class Training:
    """A Dask fit's training rows and what its predictions need of them."""

    parts: list
    spread: Spread
    weights: list
    values: list


def distributed_loess(estimator, X, y, sample_weight) -> tuple[Training, LoessResult, list]:
    """:meth:`attnpool.Loess.fit` on Dask arrays; sets the estimator's ``divisor_``,
    ``span_`` and ``_level`` and returns the training rows, the fit (its arrays Dask
    arrays) and the per-part robustness weights; None for exact statistics of at most
    :data:`~attnpool.smoothers.loess_fit.EXACT_STATISTICS` rows (whose ``δ₂`` needs the
    operator: :func:`gathered`, then the fit in memory)."""
    from ..smoothers.loess_fit import EXACT_STATISTICS
    from .order_statistics import trimmed_scale

    parts, spread = training_parts(X, y, sample_weight)
    n, d = spread.n, spread.low.shape[0]
    if estimator.statistics == "exact" and n <= EXACT_STATISTICS:
        return None
    if n < 2:
        raise ValueError(f"Loess needs at least 2 samples; got n_samples = {n}")
    check_several_points(spread.low, spread.high)
    estimator.n_features_in_ = d
    keys = [delayed(keys_of)(part) for part in parts]
    divisor = trimmed_scale(keys, n, d, spread.low) if estimator.normalize and d > 1 else np.ones(d)
    level = median([delayed(_responses)(part) for part in parts], n)
    gaps, heaviest = zip(*dask.compute(*[delayed(_largest)(part, level) for part in parts]),
                         strict=True)  # fmt: skip
    unit, exponent = response_unit(gaps), prior_exponent(max(heaviest))
    estimator.divisor_, estimator._origin = divisor, spread.low
    estimator._level, estimator._unit = level, unit  # (y = level + unit · the fit's y)
    estimator._prior_exponent = exponent  # (the prior weights in units of 2ᵉ)
    origin = spread.low

    def scaled(rows):
        return _moved(rows, origin, divisor)

    parts = list(dask.persist(*[delayed(_scaled)(part, origin, divisor, level, unit, exponent)
                                for part in parts]))  # fmt: skip
    spread = replace(spread, boxes=[None if b is None else scaled(b) for b in spread.boxes],
                     low=scaled(spread.low), high=scaled(spread.high))  # fmt: skip
    training = Training(parts, spread, [delayed(_prior)(p) for p in parts],
                        [delayed(_responses)(p) for p in parts])  # fmt: skip
    estimator._resolve_span(n, lambda spans: _chosen_span(estimator, training, spans))
    groups, radius = _neighbourhoods(estimator, training, estimator.span_)
    result, robust = _iterations(estimator, training, groups, radius)
    return training, result, robust


def _neighbourhoods(estimator, training, span):
    """The training rows' query groups and radii at ``span``."""
    from ..smoothers.neighbourhoods import neighbour_count

    spread = training.spread
    count = estimator.neighbours or neighbour_count(span, spread.n)
    rows = group_rows(spread.low.shape[0], estimator.degree, count)
    groups = query_groups(training.parts, spread.sizes, rows, own=True)
    return groups, group_radii(training.parts, spread, groups, count, span)


def _chosen_span(estimator, training, spans):
    """:func:`~attnpool.smoothers.span_selection.select_span` over the blocks."""
    from ..smoothers.span_selection import (
        best_span,
        checked_spans,
        constant_span,
        criteria_in_data_units,
        criterion_value,
        span_values,
    )

    def value_of(span: float) -> float:
        groups, radius = _neighbourhoods(estimator, training, span)
        sums = distributed_sums(training.parts, training.spread, groups, radius,
                                Columns(training.values, training.weights), estimator.degree,
                                estimator._kernel(), own=True)  # fmt: skip
        pieces = [[sums[i] for i in rows] for rows in _by_part(groups, len(training.parts))]
        totals = _total(_criterion_sums, pieces, training.values, training.weights)
        return criterion_value(estimator.span, training.spread.n, *totals)

    spans = checked_spans(spans)
    if not any(dask.compute(*[delayed(np.any)(y) for y in training.values])):  # y − its median
        return constant_span(spans, estimator.span)
    total, first, second = _total(_moments, training.values, training.weights)
    variance = second / total - (first / total) ** 2
    span, values = best_span(spans, span_values(spans, value_of), estimator.span, variance)
    return span, criteria_in_data_units(values, estimator.span, estimator._unit,
                                        estimator._prior_exponent)  # fmt: skip


def _criterion_sums(sums, y, prior):
    from ..smoothers.span_selection import criterion_sums

    fitted, own = _joined(sums, "fits"), _joined(sums, "own")
    return np.concatenate([[own.sum()], criterion_sums(y, fitted, own, prior)])


def _moments(y, prior):
    """``Σ w``, ``Σ w y`` and ``Σ w y²`` of a part's rows (``y`` about its median)."""
    return np.array([np.sum(prior), prior @ y, prior @ y**2])


def _prior(part):
    return part.prior


def _responses(part):
    return part.y


def _largest(part, level):
    """A part's largest ``|y − level|`` and largest prior weight."""
    return (float(np.max(np.abs(part.y - level), initial=0.0)),
            float(np.max(part.prior, initial=0.0)))  # fmt: skip


def _scaled(part, origin, divisor, level, unit, exponent):
    return replace(part, X=_moved(part.X, origin, divisor), y=(part.y - level) / unit,
                   prior=np.ldexp(part.prior, -exponent))  # fmt: skip


def _moved(rows, origin, divisor):
    """Rows as :meth:`attnpool.Loess._scaled_rows` moves them."""
    return (rows - origin) / divisor


def _iterations(estimator, training, groups, radius):
    """The fit's iterations and statistics over the groups (module docstring)."""
    kernel, degree = estimator._kernel(), estimator.degree
    parts, spread, prior, y = training.parts, training.spread, training.weights, training.values
    n, by_part = spread.n, _by_part(groups, len(parts))

    def joined(sums, name="fits"):  # per-part arrays from the groups'
        return [delayed(_joined)([sums[i] for i in rows], name) for rows in by_part]

    exact = estimator.statistics == "exact"
    probes = _each(_probes, parts) if exact else None
    columns = Columns(y, prior, _each(ones_of, parts) if exact else None, probes)
    sums = distributed_sums(parts, spread, groups, radius, columns, degree, kernel, own=True)
    fitted = joined(sums)
    trace, squares = (float(total) for total in _total(_statistic_sums, sums))
    if exact:
        one_delta = n - 2.0 * trace + squares
        two = two_delta(trace, squares, n, _total(_products, probes, joined(sums, "smooths")))
    else:
        from ..smoothers.approximate_statistics import approximate_deltas

        one_delta, two = approximate_deltas(trace, n, spread.low.shape[0], degree)
    iterations = 1 if estimator.family == "gaussian" else int(estimator.iterations)
    robust = _each(ones_of, parts)
    for _ in range(1, iterations):
        residuals = _each(np.subtract, y, fitted)
        middle = median(_each(np.abs, residuals), n)
        robust = _each(robustness_weights, residuals, [middle] * len(parts))
        columns = Columns(y, _each(np.multiply, prior, robust))
        sums = distributed_sums(parts, spread, groups, radius, columns, degree, kernel)
        fitted = list(dask.persist(*joined(sums)))
    if iterations > 1:  # the pseudovalues' smooth measures the residual scale
        middle = median(_each(_scaled_residuals, y, fitted, prior), n)
        last = _each(np.multiply, prior, robust)
        shares = _total(_share_sum, y, fitted, prior, last, [middle] * len(parts))
        step = pseudo_step(n, shares, estimator._prior_exponent)
        pseudo = _each(_pseudo, y, fitted, last, [step] * len(parts))
        sums = distributed_sums(parts, spread, groups, radius, Columns(pseudo, prior), degree,
                                kernel)  # fmt: skip
        sum_squares = _total(_weighted_squares, pseudo, joined(sums), prior)
    else:
        sum_squares = _total(_weighted_squares, y, fitted, prior)
    # persisted: a graph built on persisted pieces does not keep them alive by itself
    fitted, robust = list(dask.persist(*fitted)), list(dask.persist(*robust))
    fitted, robust_array = _array(fitted, spread.sizes), _array(robust, spread.sizes)
    residuals = _array(y, spread.sizes) - fitted
    result = LoessResult(fitted, residuals, robust_array, trace, one_delta, two,
                         float(sum_squares))  # fmt: skip
    return result, robust


def _each(function, *lists) -> list:
    """``function`` of each row of the ``lists``' items, as tasks."""
    return [delayed(function)(*items) for items in zip(*lists, strict=True)]


def _total(function, *lists):
    """The sum of ``function`` over the ``lists``' items, computed."""
    return tree_sum(_each(function, *lists)).compute()


def _array(pieces: list, sizes: list) -> da.Array:
    """One Dask array (n,) of per-part delayed arrays of ``sizes`` rows."""
    return da.concatenate([da.from_delayed(piece, (size,), np.float64)
                           for piece, size in zip(pieces, sizes, strict=True)])  # fmt: skip


def distributed_predict(estimator, X, return_std: bool):
    """:meth:`attnpool.Loess.predict` of a model fitted to Dask arrays, at NumPy or Dask
    ``X`` (m, d): NumPy or Dask results like ``X``."""
    from .._support.estimator_api import is_dask, validate_data

    training = estimator._training
    d = training.spread.low.shape[0]
    if is_dask(X):
        if X.ndim != 2 or X.shape[1] != d:
            raise ValueError(
                f"X: expected a Dask array of shape (m, {d}); received shape {X.shape}"
            )
        blocks = [
            delayed(_moved)(b, estimator._origin, estimator.divisor_)
            for b in X.rechunk({1: -1}).to_delayed().ravel()
        ]
        sizes = list(X.chunks[0])
    else:
        X = validate_data(estimator, X, reset=False, dtype=np.float64)
        blocks, sizes = [delayed(estimator._scaled_rows(X))], [X.shape[0]]
    if return_std and not np.isfinite(estimator.residual_scale_):
        raise ValueError(
            "return_std: this fit interpolates the data and has no residual scale; "
            "fit with a larger span"
        )
    from ..smoothers.neighbourhoods import neighbour_count

    count = estimator.neighbours or neighbour_count(estimator.span_, training.spread.n)
    groups = query_groups(blocks, sizes, group_rows(d, estimator.degree, count), own=False)
    radius = group_radii(training.parts, training.spread, groups, count, estimator.span_)
    weights = [delayed(np.multiply)(w, r)
               for w, r in zip(training.weights, estimator._robust_parts, strict=True)]  # fmt: skip
    squares = [delayed(np.reciprocal)(w) for w in training.weights] if return_std else None
    sums = distributed_sums(training.parts, training.spread, groups, radius,
                            Columns(training.values, weights, squares), estimator.degree,
                            estimator._kernel())  # fmt: skip
    group_sizes = [g.size for g in groups]
    fits = [delayed(_fits)(s, estimator._level, estimator._unit) for s in sums]
    fits = _array(dask.persist(*fits), group_sizes)
    se = None
    if return_std:
        scale = estimator._held_scale()
        se = _array(dask.persist(*[delayed(_standard_error)(s, scale) for s in sums]), group_sizes)
    if not is_dask(X):
        fits, se = dask.compute(fits, se)
    return (fits, se) if return_std else fits


def _fits(sums, level, unit):
    return sums.fits * unit + level


def _standard_error(sums, scale):
    return scale * np.sqrt(sums.spread)


def _probes(part):
    return probe_signs(part.start, part.start + part.X.shape[0])


def _by_part(groups, count):
    rows = [[] for _ in range(count)]
    for index, group in enumerate(groups):
        rows[group.own[0]].append(index)
    return rows


def _joined(sums, name):
    pieces = [getattr(s, name) for s in sums]
    return np.concatenate(pieces) if pieces else np.zeros(0)


def _statistic_sums(sums):
    """``(Σ Lᵢᵢ, Σ L²)`` of a group's rows (0 for the second where not summed)."""
    spread = 0.0 if sums.spread is None else float(np.sum(sums.spread))
    return np.array([float(np.sum(sums.own)), spread])


def _products(probes, smooths):
    from ..smoothers.loess_fit import probe_products

    return probe_products(probes, smooths)


def _scaled_residuals(y, fitted, prior):
    return np.abs(y - fitted) * np.sqrt(prior)


def _share_sum(y, fitted, prior, robust, middle):
    from ..smoothers.loess_fit import pseudo_shares

    return float(np.sum(pseudo_shares(y, fitted, prior, robust, middle)))


def _pseudo(y, fitted, robust, factor):
    return fitted + factor * robust * (y - fitted)


def _weighted_squares(a, b, w):
    return float(np.sum(w * (a - b) ** 2))
