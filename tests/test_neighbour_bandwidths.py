"""Bandwidths by nearest neighbours (R np's ``generalized_nn`` and ``adaptive_nn``):
distances by brute force, fits against the textbook formula with per-pair bandwidths
(long double on hostile data), the number of neighbours chosen by CV."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone

from attnpool import LocalLinear, NadarayaWatson, kernels
from attnpool.regression.pairs import cv_score, neighbour_distances

LD = np.longdouble


def _kth_distances(x_train, points, k, exclude_self=False):
    out = np.empty(points.shape)
    for c in range(x_train.shape[1]):
        for i in range(points.shape[0]):
            gaps = np.sort(np.abs(points[i, c] - x_train[:, c]))
            out[i, c] = gaps[k[c] - 1 + int(exclude_self)]
    return out


def test_distances_are_the_kth_smallest_gaps():
    rng = np.random.default_rng(0)
    x = np.round(rng.uniform(0, 10, (50, 2)), 1)  # repeated values too
    points = rng.uniform(-1, 11, (20, 2))
    k = np.array([7, 3])
    assert np.array_equal(neighbour_distances(x, points, k), _kth_distances(x, points, k))
    got = neighbour_distances(x, x, k, exclude_self=True)
    assert np.array_equal(got, _kth_distances(x, x, k, exclude_self=True))
    assert np.all(neighbour_distances(np.zeros((5, 1)), np.zeros((5, 1)), np.array([2])) == 0)


HOSTILE_VALUES = [-1e300, -3.5, -1.0, 0.0, 0.0, 2.0, 2.0, 7.25, 1e-300, 1e300]


@settings(max_examples=80, deadline=None)
@given(
    values=st.lists(st.sampled_from(HOSTILE_VALUES), min_size=1, max_size=12),
    points=st.lists(st.floats(-1e300, 1e300, allow_nan=False), min_size=1, max_size=5),
)
def test_every_rank_s_distance_is_the_sorted_gaps_on_hostile_data(values, points):
    x = np.array(values)[:, None]
    q = np.array(points)[:, None]
    for k in range(1, len(values) + 1):
        want = _kth_distances(x, q, np.array([k]))
        assert np.array_equal(neighbour_distances(x, q, np.array([k])), want)


def _textbook(x_train, y, queries, kernel, k, bandwidth_type, leave_out=False):
    """NW and LL by the formula in long double: ``w_ij = K(u_ij) / Π H`` (per key) or
    ``K(u_ij)`` (per query), ``u_ij = (q_i − x_j) / H``; the LL by weighted least squares."""
    if bandwidth_type == "generalized_nn":
        h = _kth_distances(x_train, queries, k, exclude_self=leave_out)[:, None, :]
    else:
        h = _kth_distances(x_train, x_train, k, exclude_self=True)[None, :, :]
    u = (queries.astype(LD)[:, None, :] - x_train.astype(LD)[None, :, :]) / h.astype(LD)
    record = kernels.get(kernel)
    if record.name == "gaussian":
        w = np.exp(-np.sum(u * u, axis=-1) / 2)
    else:  # a product of one-dimensional kernels
        w = np.prod(np.where(np.abs(u) < 1, 0.75 * (1 - u * u), 0), axis=-1)
    if bandwidth_type == "adaptive_nn":
        w = w / np.prod(h.astype(LD), axis=-1)
    if leave_out:
        np.fill_diagonal(w, 0)
    local_constant = (w @ y.astype(LD)) / w.sum(axis=1)
    linear = []
    for i, q in enumerate(queries):
        design = np.c_[np.ones(len(x_train)), x_train - q].astype(LD)
        gram = (design.T * w[i]) @ design
        moment = (design.T * w[i]) @ y.astype(LD)
        linear.append(np.linalg.solve(gram.astype(np.float64), moment.astype(np.float64))[0])
    return np.asarray(local_constant, np.float64), np.array(linear)


@pytest.mark.parametrize("bandwidth_type", ["generalized_nn", "adaptive_nn"])
@pytest.mark.parametrize("kernel", ["gaussian", "epanechnikov-product"])
@pytest.mark.parametrize("d", [1, 2])
def test_fits_are_the_textbook_formula(bandwidth_type, kernel, d):
    rng = np.random.default_rng(d)
    x = rng.uniform(0, 5, (90, d))
    y = np.sin(x.sum(axis=1)) + 0.1 * rng.normal(size=90)
    queries = rng.uniform(0.5, 4.5, (11, d))
    k = [25] if d == 1 else [40, 60]
    nw = NadarayaWatson(kernel, bandwidth=k, bandwidth_type=bandwidth_type).fit(x, y)
    ll = LocalLinear(kernel, bandwidth=k, bandwidth_type=bandwidth_type).fit(x, y)
    constant, linear = _textbook(x, y, queries, kernel, np.array(k), bandwidth_type)
    assert nw.predict(queries) == pytest.approx(constant, rel=1e-12, abs=1e-12)
    assert ll.predict(queries) == pytest.approx(linear, rel=1e-9, abs=1e-9)
    loo, _ = _textbook(x, y, x, kernel, np.array(k), bandwidth_type, leave_out=True)
    score = cv_score(x, y[:, None], kernel=kernels.get(kernel), setting=np.array(k),
                     bandwidth_type=bandwidth_type, degree=0)  # fmt: skip
    assert score == pytest.approx(np.mean((y - loo) ** 2), rel=1e-12)


@pytest.mark.parametrize("bandwidth_type", ["generalized_nn", "adaptive_nn"])
def test_cv_finds_the_best_number_of_neighbours(bandwidth_type):
    rng = np.random.default_rng(4)
    x = rng.uniform(0, 5, (150, 1)) ** 2  # dense near 0, sparse beyond
    y = np.sin(x[:, 0]) + 0.2 * rng.normal(size=150)
    model = NadarayaWatson(bandwidth_type=bandwidth_type).fit(x, y)
    every = [cv_score(x, y[:, None], kernel=kernels.get("gaussian"), setting=np.array([k]),
                      bandwidth_type=bandwidth_type, degree=0) for k in range(1, 150)]  # fmt: skip
    assert model.bandwidth_[0] == 1 + int(np.argmin(every))
    assert model.cv_score_ == pytest.approx(min(every), rel=1e-12)


def test_cv_in_two_columns_is_a_local_minimum_over_the_integers():
    rng = np.random.default_rng(6)
    x = rng.uniform(0, 5, (120, 2))
    y = np.sin(2 * x[:, 0]) + 0.05 * x[:, 1] + 0.2 * rng.normal(size=120)
    model = LocalLinear(bandwidth_type="adaptive_nn").fit(x, y)
    best = model.bandwidth_

    def score(k):
        return cv_score(x, y[:, None], kernel=kernels.get("gaussian"), setting=np.array(k),
                        bandwidth_type="adaptive_nn", degree=1)  # fmt: skip

    assert model.cv_score_ == pytest.approx(score(best), rel=1e-12)
    for step in ([1, 0], [-1, 0], [0, 1], [0, -1]):
        neighbour = np.clip(best + step, 1, 119)
        assert model.cv_score_ <= score(neighbour) + 1e-15
    assert best[1] > best[0]  # the column that hardly matters is smoothed more


@pytest.mark.parametrize("bandwidth_type", ["generalized_nn", "adaptive_nn"])
def test_hostile_data_meet_the_long_double_formula(bandwidth_type):
    rng = np.random.default_rng(9)
    x = rng.uniform(0, 5, (60, 1))
    y = np.cos(x[:, 0])
    queries = np.linspace(0.2, 4.8, 9)[:, None]
    constant, linear = _textbook(x, y, queries, "gaussian", np.array([12]), bandwidth_type)
    for shift, scale, size in ((1.7e9, 1.0, 1.0), (0.0, 1e-300, 1.0), (0.0, 1e250, 1e300)):
        xs, qs = x * scale + shift, queries * scale + shift
        nw = NadarayaWatson(bandwidth=12, bandwidth_type=bandwidth_type).fit(xs, y * size)
        ll = LocalLinear(bandwidth=12, bandwidth_type=bandwidth_type).fit(xs, y * size)
        # far from the origin, a difference of coordinates keeps eps × 1.7e9 / 5
        rel = 1e-12 if shift == 0 else 1e-6
        assert nw.predict(qs) / size == pytest.approx(constant, rel=rel, abs=rel)
        assert ll.predict(qs) / size == pytest.approx(linear, rel=100 * rel, abs=100 * rel)


def test_errors_name_the_argument():
    x = np.linspace(0, 1, 20)[:, None]
    y = x[:, 0] ** 2
    cases = [
        (NadarayaWatson(bandwidth=0, bandwidth_type="adaptive_nn"), "whole numbers"),
        (NadarayaWatson(bandwidth=2.5, bandwidth_type="adaptive_nn"), "whole numbers"),
        (NadarayaWatson(bandwidth=20, bandwidth_type="adaptive_nn"), r"\[1, 19\]"),
        (NadarayaWatson(bandwidth=[3, 4], bandwidth_type="adaptive_nn"), "one per column"),
        (NadarayaWatson(bandwidth="aicc", bandwidth_type="generalized_nn"), "'cv' or given"),
        (NadarayaWatson(bandwidth_type="knn"), "bandwidth_type: expected one of"),
        (NadarayaWatson(bandwidth_type="adaptive_nn", method="fgt"), "method: "),
        (NadarayaWatson(bandwidth_type="adaptive_nn", var_type="u"), "var_type: "),
    ]
    for model, message in cases:
        with pytest.raises(ValueError, match=message):
            model.fit(x, y)
    fitted = NadarayaWatson(bandwidth=5, bandwidth_type="generalized_nn").fit(x, y)
    for call, name in ((lambda: fitted.predict(x, return_std=True), "return_std"),
                       (lambda: fitted.attention_weights(x), "attention_weights"),
                       (lambda: fitted.marginal_effects(x), "marginal_effects")):  # fmt: skip
        with pytest.raises(ValueError, match=name):
            call()


@pytest.mark.parametrize("bandwidth_type", ["generalized_nn", "adaptive_nn"])
@pytest.mark.parametrize("estimator", [NadarayaWatson, LocalLinear])
def test_a_zero_bandwidth_is_its_limit_exact_lookup(bandwidth_type, estimator):
    """Rounded data: the k-th nearest value can be the point's own (k within a run of
    repeats), and the bandwidth zero. The kernel K(Δ/h)/h then tends to δ(Δ): the fit at
    a repeated value is the mean response of its repeats, and no NaN appears."""
    x = np.repeat(np.arange(6.0), 4)[:, None]
    y = np.arange(24.0) ** 0.5
    model = estimator(bandwidth=2, bandwidth_type=bandwidth_type).fit(x, y)
    means = y.reshape(6, 4).mean(axis=1)
    assert model.predict(np.arange(6.0)[:, None]) == pytest.approx(means, rel=1e-12)
    degree = int(estimator is LocalLinear)
    score = cv_score(x, y[:, None], kernel=kernels.get("gaussian"), setting=np.array([2]),
                     bandwidth_type=bandwidth_type, degree=degree)  # fmt: skip
    copies = y.reshape(6, 4)
    loo = (copies.sum(axis=1, keepdims=True) - copies) / 3  # the other repeats' mean
    assert score == pytest.approx(np.mean((copies - loo) ** 2), rel=1e-12)
    in_two = np.c_[x, np.tile(np.arange(4.0), 6)]  # repeats in one column only
    fitted = estimator(bandwidth=[2, 3], bandwidth_type=bandwidth_type).fit(in_two, y)
    assert np.all(np.isfinite(fitted.predict(in_two + 0.3)))


@pytest.mark.parametrize("bandwidth_type", ["generalized_nn", "adaptive_nn"])
def test_integer_weights_are_repeated_rows(bandwidth_type):
    """A row of weight w counts as w copies in the neighbour distances too."""
    rng = np.random.default_rng(8)
    x = rng.uniform(0, 5, (50, 2))
    y = np.sin(x[:, 0]) + x[:, 1] + 0.1 * rng.normal(size=50)
    weights = rng.integers(0, 4, 50)
    rows = np.repeat(np.arange(50), weights)
    queries = rng.uniform(0, 5, (9, 2))
    for estimator in (NadarayaWatson, LocalLinear):
        weighted = estimator(bandwidth_type=bandwidth_type).fit(x, y, sample_weight=weights)
        repeated = estimator(bandwidth_type=bandwidth_type).fit(x[rows], y[rows])
        assert np.array_equal(weighted.bandwidth_, repeated.bandwidth_)
        assert weighted.cv_score_ == pytest.approx(repeated.cv_score_, rel=1e-10)
        assert weighted.predict(queries) == pytest.approx(repeated.predict(queries), rel=1e-10)
    got = neighbour_distances(x, queries, np.array([5, 9]), weights=weights)
    assert np.array_equal(got, neighbour_distances(x[rows], queries, np.array([5, 9])))


def test_parameters_summary_and_clone():
    x = np.linspace(0, 3, 40)[:, None]
    model = LocalLinear(bandwidth=6, bandwidth_type="generalized_nn").fit(x, np.sin(x[:, 0]))
    assert model.get_params()["bandwidth_type"] == "generalized_nn"
    assert clone(model).bandwidth_type == "generalized_nn"
    text = str(model.summary())
    assert "Neighbours (generalized_nn)  6" in text
    assert model.marginal_effects(x[:3]).shape == (3, 1)
    assert 0.9 < model.r_squared_ <= 1.0
