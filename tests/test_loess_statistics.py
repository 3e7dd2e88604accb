"""Loess's approximate statistics (R's default) against netlib's loess, which R and
scikit-misc run, and large fits in several columns (the compiled neighbourhood loop)
against it without any threshold moved."""

from __future__ import annotations

import numpy as np
import pytest
from skmisc.loess import loess as netlib_loess

import attnpool
from attnpool.smoothers.local_polynomial import design
from test_loess import _close


def _data(d, n=300, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0.0, 10.0, (n, d))
    X[:, 0] *= 3.0
    return X, np.sin(X).sum(axis=1) + 0.3 * rng.standard_t(4, n)


def _netlib(X, y, iterations=None, **options):
    # scikit-misc reads a two-dimensional x in column-major order
    model = netlib_loess(X.T.flatten().reshape(X.shape), y, surface="direct",
                         statistics="approximate", **options)  # fmt: skip
    if iterations is not None:
        model.control.iterations = iterations
    model.fit()
    return model


def _same(ours, theirs, X, y, prior=None):
    out = theirs.outputs
    _close(ours.fitted_values_, out.fitted_values)
    for name in ("enp", "one_delta", "two_delta", "trace_hat"):
        _close(getattr(ours, name + "_"), getattr(out, name))
    _close(ours.residual_scale_, out.residual_scale)
    queries = X[:9] + 0.05
    predicted = theirs.predict(queries.T.flatten().reshape(queries.shape), stderror=True)
    fits, se = ours.predict(queries, return_std=True)
    _close(ours.df_, predicted.df)
    if ours.family == "gaussian" and prior is None:
        _close(fits, predicted.values)
        _close(se, predicted.stderr)
    else:  # the last fit's operator (see _last_fit)
        textbook_fits, textbook_se = _last_fit(ours, X, y, prior, queries)
        _close(fits, textbook_fits)
        _close(se, textbook_se)
    _close(ours.predict(X), ours.fitted_values_)


def _last_fit(model, X, y, prior, queries):
    """The fits and ``s √(Σⱼ Lⱼ² / wⱼ)`` at ``queries`` by the formulas, ``L`` the row of
    the weighted least squares on the ``⌊span n⌋`` nearest rows weighted by the tricube ×
    the prior weights × the robustness weights: the operator of the last fit, which gives
    the fitted values at the rows. With unit prior weights this is R's
    ``predict.loess(se = TRUE)``. Netlib's ``predict``, which scikit-misc runs, leaves the
    robustness weights out of ``L``; with prior weights, both weight the new points' fits
    by them twice (R's ``pars$robust`` holds prior × robustness, and ``predLoess``
    multiplies it by the prior weights again), so that they do not reproduce the fitted
    values at the rows."""
    prior = np.ones(y.size) if prior is None else prior
    scaled, at = X / model.divisor_, queries / model.divisor_
    fits, out = [], []
    for query in at:
        distance = np.sqrt(np.sum((scaled - query) ** 2, axis=1))
        radius = np.sort(distance)[int(np.floor(model.span_ * y.size)) - 1]
        tricube = np.where(distance < radius, (1 - (distance / radius) ** 3) ** 3, 0.0)
        weights = tricube * prior * model.robustness_weights_
        B = design((scaled - query) / radius, model.degree)
        row = np.linalg.solve(B.T @ (weights[:, None] * B), B.T * weights)[0]
        fits.append(row @ y)
        out.append(model.residual_scale_ * np.sqrt(np.sum(row**2 / prior)))
    return np.array(fits), np.array(out)


@pytest.mark.parametrize(
    "d, degree", [(1, 0), (1, 1), (1, 2), (2, 0), (2, 1), (2, 2), (3, 2), (4, 1), (4, 2)]
)
def test_approximate_statistics_equal_netlibs(d, degree):
    # netlib's loess takes four predictors at most (beyond, scikit-misc's crashes)
    X, y = _data(d)
    span = 0.4 if d < 4 else 0.9
    theirs = _netlib(X, y, span=span, degree=degree)
    ours = attnpool.Loess(span=span, degree=degree, statistics="approximate").fit(X, y)
    _same(ours, theirs, X, y)


def test_approximate_statistics_beyond_their_range_warn():
    # five columns, degree 0, a wide span: tr L below the six parameters the formulas
    # assume (netlib stops there: "Chernobyl! trL<k")
    X, y = _data(5)
    with pytest.warns(RuntimeWarning, match="statistics='exact'"):
        model = attnpool.Loess(span=0.9, degree=0, statistics="approximate").fit(X, y)
    assert np.isfinite(model.one_delta_) and np.isfinite(model.two_delta_)


def test_approximate_statistics_of_the_symmetric_family_and_weights():
    X, y = _data(2)
    weights = np.random.default_rng(3).uniform(0.5, 2.0, y.size)
    theirs = _netlib(X, y, span=0.5, degree=2, family="symmetric", iterations=3,
                     weights=weights)  # fmt: skip
    ours = attnpool.Loess(span=0.5, family="symmetric", statistics="approximate")
    _same(ours.fit(X, y, sample_weight=weights), theirs, X, y, weights)


@pytest.mark.parametrize("family", ["gaussian", "symmetric"])
def test_large_fits_in_two_columns_equal_netlibs(family):
    # 6000 rows: the radii, fits and Lᵢᵢ come from the compiled loop, as at any size
    X, y = _data(2, n=6000, seed=5)
    theirs = _netlib(X, y, span=0.1, degree=2, family=family, iterations=3)
    ours = attnpool.Loess(span=0.1, family=family, statistics="approximate").fit(X, y)
    _same(ours, theirs, X, y)


def test_exact_and_approximate_statistics_share_the_fit():
    X, y = _data(2, n=400)
    exact = attnpool.Loess(span=0.3).fit(X, y)
    approximate = attnpool.Loess(span=0.3, statistics="approximate").fit(X, y)
    _close(approximate.fitted_values_, exact.fitted_values_, 1e-13)
    assert approximate.trace_hat_ == pytest.approx(exact.trace_hat_, rel=1e-12)
    # the formulas are close to the exact values, not equal to them
    assert approximate.one_delta_ == pytest.approx(exact.one_delta_, rel=2e-2)
    assert approximate.one_delta_ != exact.one_delta_


def test_statistics_are_named_when_wrong():
    X, y = _data(1, n=50)
    with pytest.raises(ValueError, match=r"statistics must be one of .*'exact'.*got 'fast'"):
        attnpool.Loess(statistics="fast").fit(X, y)


def test_residual_scale_of_weighted_robust_fits_equals_netlibs():
    # the pseudovalues take the last fit's weights, prior × robustness, as lowesp's rwgts
    X, y = _data(2)
    weights = np.random.default_rng(4).uniform(0.3, 3.0, y.size)
    theirs = netlib_loess(X.T.flatten().reshape(X.shape), y, weights=weights, span=0.5,
                          degree=2, family="symmetric", surface="direct",
                          statistics="exact")  # fmt: skip
    theirs.control.iterations = 3  # scikit-misc's count leaves out the first fit
    theirs.fit()
    ours = attnpool.Loess(span=0.5, family="symmetric").fit(X, y, sample_weight=weights)
    _close(ours.residual_scale_, theirs.outputs.residual_scale)
    _close(ours.enp_, theirs.outputs.enp)
    _close(ours.robustness_weights_ * weights, theirs.outputs.robust)
