"""The LOESS span chosen from the data, by a criterion of the fit's operator ``L``.

For each candidate span the fit at every point is computed with its row of ``L``; the
criteria are those of the local regression literature for linear smoothers:

- ``"gcv"``: generalised cross-validation, ``n Σ wᵢ rᵢ² / (n − tr L)²`` (Craven & Wahba);
- ``"aicc"``: ``log σ̂² + 1 + 2 (tr L + 1) / (n − tr L − 2)``, ``σ̂² = Σ wᵢ rᵢ² / Σ wᵢ``
  (Hurvich, Simonoff & Tsai 1998);
- ``"cv"``: leave-one-out cross-validation, ``Σ wᵢ (rᵢ / (1 − Lᵢᵢ))² / Σ wᵢ`` (exact for
  a linear smoother: the fit without point ``i`` is ``(ŷᵢ − Lᵢᵢ yᵢ) / (1 − Lᵢᵢ)``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .._support.units import objective_in_data_units
from ..bandwidth.flat_criteria import at_rounding, response_variance, rounding_limit, warn_flat
from ..kernels import Kernel
from .loess_fit import leverage
from .neighbourhoods import SpanTooSmall, radii

__all__ = [
    "CRITERIA",
    "best_span",
    "checked_spans",
    "constant_span",
    "criteria_in_data_units",
    "criterion_sums",
    "criterion_value",
    "select_span",
    "span_values",
]

CRITERIA = ("gcv", "aicc", "cv")


def select_span(
    X: np.ndarray,
    y: np.ndarray,
    prior: np.ndarray,
    spans: np.ndarray,
    degree: int,
    kernel: Kernel,
    criterion: str,
) -> tuple[float, np.ndarray]:
    """The span of ``spans`` with the smallest ``criterion`` (the largest among equals),
    and the criterion at each, in the units of ``y`` and ``prior`` as given
    (:func:`criteria_in_data_units` takes them to the data's). ``X`` scaled, shape
    (n, d); ``prior`` the weights."""
    spans = checked_spans(spans)
    if np.all(y == y[0]):
        return constant_span(spans, criterion)
    values = span_values(spans, lambda span: _criterion(X, y, prior, span, degree, kernel,
                                                        criterion))  # fmt: skip
    # (ranked in y's unit: 1e±200 ties)
    return best_span(spans, values, criterion, response_variance(y, prior))


def criteria_in_data_units(
    values: np.ndarray, criterion: str, unit: float, prior_exponent: int = 0
) -> np.ndarray:
    """The ``criterion``'s ``values`` of a response divided by ``unit`` with prior weights
    divided by ``2^prior_exponent``, in their own units (GCV and CV times ``unit²``, AICc
    plus ``2 log unit``; GCV, ``n Σ w r² / (n − tr L)²``, also times ``2^prior_exponent``)."""
    found = np.asarray(objective_in_data_units(values, "aicc" if criterion == "aicc" else "cv",
                                               unit))  # fmt: skip
    return np.ldexp(found, prior_exponent) if criterion == "gcv" else found


def span_values(spans: np.ndarray, value_of: Callable[[float], float]) -> np.ndarray:
    """``value_of(span)`` for each of the ``spans``: ``inf`` where the span is too small
    for the data (:class:`.neighbourhoods.SpanTooSmall`: no row, or tied rows), unless
    every one is (that refusal is then raised)."""
    values, refusals = [], []
    for span in spans:
        try:
            values.append(value_of(float(span)))
        except SpanTooSmall as error:
            values.append(np.inf)
            refusals.append(error)
    if len(refusals) == len(values):
        raise refusals[-1]
    return np.array(values)


def checked_spans(spans) -> np.ndarray:
    """``spans`` as a float array, refused unless positive and finite."""
    spans = np.asarray(spans, dtype=float)
    if spans.ndim != 1 or spans.size == 0 or not np.all(np.isfinite(spans) & (spans > 0)):
        raise ValueError(f"spans must be positive finite numbers; got {spans!r}")
    return spans


def best_span(
    spans: np.ndarray, values: np.ndarray, criterion: str, variance: float
) -> tuple[float, np.ndarray]:
    """The span with the smallest criterion ``values`` (the largest among equals), and
    the values. Where that value is at rounding (every row fitted exactly) for a response
    of this ``variance`` and some span's is not, the largest span up to which every
    value is at rounding, with an :class:`attnpool.bandwidth.FlatCriterionWarning`
    (:mod:`attnpool.bandwidth.flat_criteria`)."""
    if not np.isfinite(values).any():
        raise ValueError(
            f"spans: the {criterion} criterion is undefined at every span of "
            f"{np.round(spans, 6).tolist()}: each leaves some row too few neighbours, or "
            "fits that interpolate the data (too few rows for the degree?); give span= a "
            "number"
        )
    best = np.flatnonzero(values == np.nanmin(values))
    span = float(spans[best[np.argmax(spans[best])]])
    if at_rounding(criterion, float(np.nanmin(values)), values, variance):
        limit = rounding_limit(criterion, variance)
        above = np.sort(spans[(spans > span) & ~(values <= limit)])
        span = float(np.max(spans[(values <= limit) & (spans < above[0] if above.size else True)]))
        warn_flat(criterion, span, "rounding", setting="span", instead="give span= a number")
    return span, values


def constant_span(spans: np.ndarray, criterion: str) -> tuple[float, np.ndarray]:
    """The largest of ``spans`` for a constant response, with a
    :class:`attnpool.bandwidth.ConstantResponseWarning`, and the criterion at each span
    in exact arithmetic (every fit is exact: 0, or −∞ for AICc, the log of a zero
    variance). Computed, the criterion would follow rounding errors to a small span."""
    from ..bandwidth.search import warn_constant_response

    largest = float(np.max(spans))
    warn_constant_response(criterion, f"the largest span ({largest:g})", setting="span")
    return largest, np.full(spans.shape, -np.inf if criterion == "aicc" else 0.0)


def _criterion(X, y, prior, span, degree, kernel, criterion) -> float:
    fitted, own = leverage(X, y, prior, radii(X, X, span), degree, kernel)
    return criterion_value(
        criterion, X.shape[0], float(own.sum()), *criterion_sums(y, fitted, own, prior)
    )


def criterion_sums(y, fitted, own, prior) -> np.ndarray:
    """``Σ w r²``, ``Σ w`` and ``Σ w (r / (1 − Lᵢᵢ))²`` of the rows: sums, so that those
    of the parts of a data set add up."""
    residuals = y - fitted
    with np.errstate(divide="ignore", invalid="ignore"):
        left_out = np.sum(prior * (residuals / (1 - own)) ** 2)
    return np.array([np.sum(prior * residuals**2), np.sum(prior), left_out])


def criterion_value(criterion, n, trace, squares, prior_total, left_out) -> float:
    """The span ``criterion`` of a fit to ``n`` rows from ``tr L`` and its
    :func:`criterion_sums`; ``inf`` where it is undefined (a fit that interpolates: GCV's
    ``n − tr L`` and CV's ``1 − Lᵢᵢ`` are 0, as the residuals are — 0/0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        if criterion == "gcv":
            value = float(n * squares / (n - trace) ** 2)
        elif criterion == "aicc":
            if n - trace - 2 <= 0:
                return float("inf")
            value = float(np.log(squares / prior_total) + 1 + 2 * (trace + 1) / (n - trace - 2))
        else:
            value = float(left_out / prior_total)
    return float("inf") if np.isnan(value) else value
