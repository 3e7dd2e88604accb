"""Loess held to netlib's loess (scikit-misc: Cleveland, Grosse & Shyu's code, the one R's
``loess`` runs) with ``surface="direct"`` and ``statistics="exact"``, and to the textbook
weighted least squares.

scikit-misc reads a two-dimensional ``x`` in column-major order whatever its layout
(``_netlib`` passes it so), counts ``iterations`` after the first fit (R counts all
fits: R's 4 are its 3), and its standard errors weigh neither by the prior weights as R's
``predict.loess`` does (``Σ L² / w``) nor by the robustness weights; those are held to
the textbook instead.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from skmisc.loess import loess as netlib_loess

import attnpool
from attnpool.smoothers.local_polynomial import design
from sklearn_checks import scikit_learn_checks


def _netlib(X, y, weights=None, iterations=None, **options):
    X = np.asarray(X, float).reshape(len(y), -1)
    model = netlib_loess(
        X.T.flatten().reshape(X.shape), y, weights=weights, surface="direct",
        statistics="exact", **options,
    )  # fmt: skip
    if iterations is not None:
        model.control.iterations = iterations
    model.fit()
    return model


def _data(d, n=300, seed=0, heavy=False):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0.0, 10.0, (n, d))
    X[:, 0] *= 3.0  # unequal scales: normalisation matters
    noise = rng.standard_t(3, n) if heavy else rng.normal(size=n)
    return X, np.sin(X).sum(axis=1) + 0.3 * noise


def _close(actual, expected, tolerance=1e-10):
    expected = np.asarray(expected, dtype=float)
    scale = max(float(np.max(np.abs(expected))), 1.0)
    np.testing.assert_allclose(actual, expected, rtol=0, atol=tolerance * scale)


@pytest.mark.parametrize("d", [1, 2, 3])
@pytest.mark.parametrize("degree", [0, 1, 2])
@pytest.mark.parametrize("span", [0.2, 0.75])
def test_netlib_numbers(d, degree, span):
    X, y = _data(d)
    theirs = _netlib(X, y, span=span, degree=degree)
    ours = attnpool.Loess(span=span, degree=degree).fit(X, y)
    out = theirs.outputs
    _close(ours.fitted_values_, out.fitted_values)
    for name in ("enp", "one_delta", "two_delta", "trace_hat"):
        _close(getattr(ours, name + "_"), getattr(out, name))
    _close(ours.residual_scale_, out.residual_scale)
    queries = X[:7] + 0.05
    predicted = theirs.predict(queries.T.flatten().reshape(queries.shape), stderror=True)
    fits, se = ours.predict(queries, return_std=True)
    _close(fits, predicted.values)
    _close(se, predicted.stderr)
    _close(ours.df_, predicted.df)
    _close(ours.predict(queries), predicted.values)


def test_normalisation_off_and_sample_weights():
    X, y = _data(2)
    weights = np.random.default_rng(1).uniform(0.5, 2.0, y.size)
    theirs = _netlib(X, y, weights=weights, span=0.4, degree=2, normalize=False)
    ours = attnpool.Loess(span=0.4, normalize=False).fit(X, y, sample_weight=weights)
    _close(ours.fitted_values_, theirs.outputs.fitted_values)
    _close(ours.residual_scale_, theirs.outputs.residual_scale)
    np.testing.assert_array_equal(ours.divisor_, [1.0, 1.0])


@pytest.mark.parametrize("d", [1, 2])
def test_symmetric_family(d):
    X, y = _data(d, heavy=True)
    theirs = _netlib(X, y, span=0.5, degree=1, family="symmetric", iterations=3)
    ours = attnpool.Loess(span=0.5, degree=1, family="symmetric", iterations=4).fit(X, y)
    _close(ours.fitted_values_, theirs.outputs.fitted_values)
    _close(ours.robustness_weights_, theirs.outputs.robust)
    _close(ours.residual_scale_, theirs.outputs.residual_scale)
    _close(ours.enp_, theirs.outputs.enp)


def _textbook_se(X, y, weights, query, span, degree, scale):
    """R's ``se.fit`` at one query by the formulas: WLS on the ``⌊span n⌋`` nearest rows
    with tricube × ``weights``, ``Var ŷ = s² Σⱼ ℓⱼ² / wⱼ`` for prior weights ``wⱼ``."""
    distance = np.sqrt(np.sum((X - query) ** 2, axis=1))
    radius = np.sort(distance)[int(np.floor(span * y.size)) - 1]
    kernel = np.where(distance < radius, (1 - (distance / radius) ** 3) ** 3, 0.0)
    B = design((X - query) / radius, degree)
    gram = B.T @ (kernel[:, None] * weights[:, None] * B)
    row = np.linalg.solve(gram, B.T * kernel * weights)[0]
    return row @ y, scale


def test_standard_errors_with_prior_weights_as_r():
    X, y = _data(1)
    prior = np.random.default_rng(2).uniform(0.5, 2.0, y.size)
    model = attnpool.Loess(span=0.4, degree=2).fit(X, y, sample_weight=prior)
    query = np.array([[7.5]])
    fit, se = model.predict(query, return_std=True)
    distance = np.abs(X[:, 0] - 7.5)
    radius = np.sort(distance)[int(np.floor(0.4 * y.size)) - 1]
    kernel = np.where(distance < radius, (1 - (distance / radius) ** 3) ** 3, 0.0) * prior
    B = design((X - 7.5) / radius, 2)
    row = np.linalg.solve(B.T @ (kernel[:, None] * B), B.T * kernel)[0]
    _close(fit, [row @ y])
    _close(se, [model.residual_scale_ * np.sqrt(np.sum(row**2 / prior))])


def test_reproduces_polynomials_of_its_degree():
    rng = np.random.default_rng(4)
    X = rng.uniform(-3, 3, (200, 2))
    quadratic = 1 + X[:, 0] - 2 * X[:, 1] + 0.5 * X[:, 0] * X[:, 1] + X[:, 1] ** 2
    model = attnpool.Loess(span=0.3, degree=2).fit(X, quadratic)
    _close(model.fitted_values_, quadratic, 1e-12)
    linear = 3 - X[:, 0]
    _close(attnpool.Loess(span=0.2, degree=1).fit(X, linear).predict(X[:9] / 2), 3 - X[:9, 0] / 2)


def test_ties_and_offsets():
    rng = np.random.default_rng(5)
    x = np.round(rng.uniform(0, 10, 400), 1)  # ~4 rows at each value
    y = np.sin(x) + rng.normal(size=400)
    theirs = _netlib(x, y, span=0.3, degree=2)
    _close(attnpool.Loess(span=0.3).fit(x[:, None], y).fitted_values_, theirs.outputs.fitted_values)
    shifted = attnpool.Loess(span=0.3).fit(x[:, None] + 1e6, y)
    _close(shifted.fitted_values_, theirs.outputs.fitted_values, 1e-7)
    with pytest.raises(ValueError, match=r"span=0\.005 is too small: the 2 nearest rows"):
        attnpool.Loess(span=0.005).fit(x[:, None], y)
    # one nearest row is the point itself, not a tie
    with pytest.raises(ValueError, match=r"span=0\.75 is too small: it takes the 1 nearest row, "
                                         r"which lies on \[0\.0\] itself"):  # fmt: skip
        attnpool.Loess().fit(np.array([[0.0], [1.0]]), np.array([1.0, 2.0]))


def test_offsets_far_beyond_the_spread_leave_the_fit_unmoved():
    # the fit depends on differences only: the predictors are moved to their least values
    # before they are divided by their trimmed scales (divided first, an offset a million
    # times the spread rounded the scaled rows by a hundredth of it)
    X, y = _data(2, n=600)
    offset = np.array([1e9, -1e12])
    moved = X * [1e-6, 1e4] + offset
    scaled = moved - offset  # exact: the same rows, rounded alike, without the offset
    here = attnpool.Loess(span=0.25).fit(scaled, y)
    there = attnpool.Loess(span=0.25).fit(moved, y)
    _close(there.fitted_values_, here.fitted_values_, 1e-8)
    _close(there.divisor_, here.divisor_, 1e-7)
    _close(there.predict(moved[:20]), here.predict(scaled[:20]), 1e-8)


@pytest.mark.parametrize("family", ["gaussian", "symmetric"])
def test_constant_response_and_outliers(family):
    rng = np.random.default_rng(6)
    x = rng.uniform(0, 10, (300, 1))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no 0/0 on the way: the MAD of the residuals is 0
        constant = attnpool.Loess(span=0.3, family=family).fit(x, np.full(300, 3.0))
        fits, errors = constant.predict(x[:5] + 0.1, return_std=True)
    np.testing.assert_array_equal(constant.fitted_values_, 3.0)
    np.testing.assert_array_equal(fits, 3.0)
    assert constant.residual_scale_ == 0.0  # a constant has no residual scale but zero
    np.testing.assert_array_equal(errors, 0.0)
    assert "nan" not in constant.summary()
    y = np.sin(x[:, 0])
    spoiled = y.copy()
    spoiled[::20] += 30.0
    clean = attnpool.Loess(span=0.3).fit(x, y).predict(x)
    fitted = attnpool.Loess(span=0.3, family=family).fit(x, spoiled).predict(x)
    assert np.abs(fitted - clean).max() < (0.1 if family == "symmetric" else 5.0)
    assert np.abs(fitted - clean).max() > (0.0 if family == "symmetric" else 1.0)


def test_running_moments_equal_direct_fits():
    X, y = _data(1, n=3000)
    model = attnpool.Loess(span=0.3, degree=2).fit(X, y)
    queries = np.linspace(-1.0, 31.0, 2000)[:, None]  # n × m above the running-moment work
    direct, _ = model.predict(queries, return_std=True)
    _close(model.predict(queries), direct, 1e-11)


@pytest.mark.parametrize("criterion", ["gcv", "aicc", "cv"])
def test_span_selection_criteria(criterion):
    X, y = _data(1, n=150)
    spans = np.array([0.2, 0.35, 0.5, 0.8])
    model = attnpool.Loess(span=criterion, spans=spans, degree=1).fit(X, y)
    n = y.size
    expected = []
    for span in spans:
        out = _netlib(X, y, span=span, degree=1).outputs
        residuals, trace = y - out.fitted_values, out.trace_hat
        if criterion == "gcv":
            expected.append(n * np.sum(residuals**2) / (n - trace) ** 2)
        elif criterion == "aicc":
            expected.append(np.log(np.mean(residuals**2)) + 1 + 2 * (trace + 1) / (n - trace - 2))
        else:
            expected.append(np.mean((residuals / (1 - out.diagonal)) ** 2))
    _close(model.criterion_, expected)
    assert model.span_ == spans[int(np.argmin(expected))]


def test_neighbours_instead_of_a_span():
    X, y = _data(1, n=100)
    by_count = attnpool.Loess(neighbours=29).fit(X, y)  # ⌊100 · 0.29⌋ would be 28
    theirs = _netlib(X, y, span=0.295)  # ⌊100 · 0.295⌋ = 29
    assert by_count.span_ == 0.29
    _close(by_count.fitted_values_, theirs.outputs.fitted_values)
    _close(by_count.predict(X[:5] + 0.1), theirs.predict(X[:5, 0] + 0.1).values)
    with pytest.raises(ValueError, match="neighbours must be a whole number from 1 to"):
        attnpool.Loess(neighbours=0).fit(X, y)


def test_intervals_and_summary():
    X, y = _data(1)
    model = attnpool.Loess(span=0.5).fit(X, y)
    fit, se = model.predict(X[:4], return_std=True)
    lower, upper = model.predict_interval(X[:4], level=0.9)
    from scipy.stats import t

    _close(upper - fit, t.ppf(0.95, model.df_) * se)
    _close(fit - lower, t.ppf(0.95, model.df_) * se)
    text = model.summary()
    assert "Number of Observations: 300" in text
    assert f"Equivalent Number of Parameters: {model.enp_:.2f}" in text
    assert "Residual Standard Error" in text


def test_prior_weights_are_not_frequencies():
    # a neighbourhood counts rows (R's definition), so the check that weight 2 equals a
    # repeated row does not apply; what holds: weight 0 is a removed row, and weights
    # matter only relative to each other
    X, y = _data(2, n=120)
    weights = np.random.default_rng(3).uniform(0.5, 2.0, y.size)
    weights[::10] = 0.0
    kept = weights > 0
    weighted = attnpool.Loess(span=0.5).fit(X, y, sample_weight=weights)
    removed = attnpool.Loess(span=0.5).fit(X[kept], y[kept], sample_weight=weights[kept])
    scaled = attnpool.Loess(span=0.5).fit(X, y, sample_weight=7.0 * weights)
    _close(weighted.predict(X), removed.predict(X), 1e-12)
    _close(scaled.predict(X), weighted.predict(X), 1e-12)
    _close(scaled.predict(X[:5], return_std=True)[1], weighted.predict(X[:5], return_std=True)[1])
    # at the float range's ends too: Σ w r² overflowed at 2¹⁰²² (fits 1.1 off); R's
    # residual scale √(Σ w r² / δ₁) and GCV grow with the weights (the symmetric family's
    # pseudovalues as √w: netlib's, held to it above), standard errors do not
    for factor in (2.0**-1000, 2.0**1022):
        for family in ("gaussian", "symmetric"):
            model = attnpool.Loess(span="gcv", spans=[0.3, 0.5], family=family)
            extreme = clone(model).fit(X, y, sample_weight=factor * weights)
            plain = clone(model).fit(X, y, sample_weight=weights)
            _close(extreme.predict(X), plain.predict(X), 1e-12)
            if family == "gaussian":
                _close(extreme.predict(X[:5], return_std=True)[1],
                       plain.predict(X[:5], return_std=True)[1])  # fmt: skip
                root = factor**0.5
                np.testing.assert_allclose(extreme.residual_scale_, plain.residual_scale_ * root,
                                           rtol=1e-13)  # fmt: skip
                np.testing.assert_allclose(extreme.criterion_, plain.criterion_ * factor,
                                           rtol=1e-13)  # fmt: skip


@scikit_learn_checks(
    [attnpool.Loess()],
    # test_prior_weights_are_not_frequencies holds what prior weights promise instead
    replaced={("Loess", "check_sample_weight_equivalence_on_dense_data")},
)
def test_scikit_learn_protocol(estimator, check):
    check(estimator)


@pytest.mark.parametrize(
    "d, kernel, family",
    [(1, "tricube", "gaussian"), (2, "tricube", "gaussian"), (2, "boxcar", "symmetric"),
     (3, "epanechnikov", "symmetric"), (1, "boxcar", "gaussian")],
)  # fmt: skip
def test_statistics_beyond_the_exact_size(monkeypatch, d, kernel, family):
    # beyond EXACT_STATISTICS rows δ₂'s small part is estimated from random signs (δ₁ and
    # tr L stay exact); everything comes from moments: running sums in one column, the
    # compiled loop (radii included) in several; a key on the radius weighs nothing on
    # every path, the boxcar's included
    from attnpool.smoothers import loess_fit, neighbourhoods, operator_rows

    X, y = _data(d, n=1200)
    X[:100] = X[100:200]  # repeated rows: keys on the radius
    weights = np.random.default_rng(7).uniform(0.5, 2.0, y.size)
    model = attnpool.Loess(span=0.3, kernel=kernel, family=family)
    exact = clone(model).fit(X, y, sample_weight=weights)
    monkeypatch.setattr(loess_fit, "EXACT_STATISTICS", 100)
    monkeypatch.setattr(operator_rows, "MOMENT_WORK", 100)
    monkeypatch.setattr(neighbourhoods, "NEIGHBOUR_WORK", 100)
    monkeypatch.setattr(operator_rows, "GRAM_ENTRIES", 7 * 100)  # G in chunks of rows
    estimated = clone(model).fit(X, y, sample_weight=weights)
    _close(estimated.fitted_values_, exact.fitted_values_)
    assert estimated.one_delta_ == pytest.approx(exact.one_delta_, rel=1e-10)
    assert estimated.trace_hat_ == pytest.approx(exact.trace_hat_, rel=1e-10)
    assert estimated.two_delta_ == pytest.approx(exact.two_delta_, rel=1e-2)
    queries = np.vstack([X[:40] + 0.01, X[100:120]])
    for ours, theirs in zip(estimated.predict(queries, return_std=True),
                            exact.predict(queries, return_std=True), strict=True):  # fmt: skip
        _close(ours, theirs, 1e-8)


@settings(max_examples=15, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    scales=st.tuples(st.floats(1e-3, 1e3), st.floats(1e-3, 1e3)),
    shift=st.floats(-1e3, 1e3),
    slope=st.floats(-10.0, 10.0),
)
def test_property_equivariance(seed, scales, shift, slope):
    # normalised columns: a fit does not see each column's units or origin; y enters
    # linearly
    rng = np.random.default_rng(seed)
    X, y = rng.uniform(0.0, 1.0, (150, 2)), rng.normal(size=150)
    base = attnpool.Loess(span=0.4).fit(X, y)
    moved = attnpool.Loess(span=0.4).fit(X * np.array(scales) + shift, slope * y + shift)
    _close(moved.fitted_values_, slope * base.fitted_values_ + shift, 1e-8)
    assert moved.enp_ == pytest.approx(base.enp_, rel=1e-8)


@pytest.mark.parametrize("d", [1, 2])
def test_span_criteria_from_moments(monkeypatch, d):
    # the fits and Lᵢᵢ the criteria need come from moments (running sums in one column,
    # the compiled loop in two)
    from attnpool.smoothers import operator_rows

    X, y = _data(d, n=400)
    spans = np.array([0.2, 0.4, 0.7])
    for criterion in ("gcv", "aicc", "cv"):
        direct = attnpool.Loess(span=criterion, spans=spans).fit(X, y).criterion_
        with monkeypatch.context() as patched:
            patched.setattr(operator_rows, "MOMENT_WORK", 100)
            windowed = attnpool.Loess(span=criterion, spans=spans).fit(X, y).criterion_
        _close(windowed, direct, 1e-10)


def test_predictions_of_dask_queries_block_by_block():
    import dask.array as da
    from distributed import Client, LocalCluster

    X, y = _data(2, n=400)
    model = attnpool.Loess(span=0.3).fit(X, y)
    queries = np.random.default_rng(9).uniform(0.0, 10.0, (1000, 2)) * [3.0, 1.0]
    lazy = da.from_array(queries, chunks=(250, 1))
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False) as cluster:
        with Client(cluster):
            fits = model.predict(lazy)
            pair = model.predict(lazy, return_std=True)
            assert isinstance(fits, da.Array) and fits.chunks == ((250,) * 4,)
            _close(fits.compute(), model.predict(queries), 1e-13)
            expected = model.predict(queries, return_std=True)
            for lazy_part, part in zip(pair, expected, strict=True):
                _close(lazy_part.compute(), part, 1e-13)
    with pytest.raises(ValueError, match=r"X: expected a Dask array of shape \(m, 2\)"):
        model.predict(da.zeros((5, 3)))


def test_spans_above_one_tend_to_the_global_polynomial():
    # above one every point is a neighbour and the radius grows by √span (R's rule): at a
    # huge span the tricube weighs all points alike, and the fit is least squares' own
    X, y = _data(1, n=200)
    far = attnpool.Loess(span=1e12, degree=2).fit(X, y)
    coefficients = np.polyfit(X[:, 0], y, 2)
    _close(far.fitted_values_, np.polyval(coefficients, X[:, 0]), 1e-9)
    assert far.enp_ == pytest.approx(3.0, rel=1e-6)  # δ₁ + 2 tr L − n of a projection
    wide = attnpool.Loess(span=1.5).fit(X, y)
    assert wide.span_ == 1.5 and np.all(np.isfinite(wide.fitted_values_))


def test_the_same_fit_without_the_compiled_loops(monkeypatch):
    # several columns without the compiled loops: the k-d tree and the operator rows in NumPy
    from attnpool.smoothers import neighbourhoods, operator_rows

    monkeypatch.setattr(operator_rows, "MOMENT_WORK", 100)
    monkeypatch.setattr(neighbourhoods, "NEIGHBOUR_WORK", 100)
    X, y = _data(2, n=500)
    compiled = attnpool.Loess(span=0.3, family="symmetric").fit(X, y)
    monkeypatch.setenv("ATTNPOOL_INSTRUCTION_SET", "none")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the missing loops' notice
        plain = attnpool.Loess(span=0.3, family="symmetric").fit(X, y)
        _close(plain.predict(X[:30] + 0.1), compiled.predict(X[:30] + 0.1))
    _close(plain.fitted_values_, compiled.fitted_values_)
    assert plain.enp_ == pytest.approx(compiled.enp_, rel=1e-10)
