"""Loess fitted to Dask arrays on a real distributed.LocalCluster (two worker processes):
every number equal to the fit in memory, on hostile data, with nothing gathered."""

from __future__ import annotations

import dask
import dask.array as da
import numpy as np
import pytest
from distributed import Client, LocalCluster
from sklearn.base import clone

import attnpool
from attnpool.bandwidth import ConstantResponseWarning
from attnpool.distributed import order_statistics
from attnpool.smoothers.neighbourhoods import trimmed_scale

pytestmark = pytest.mark.xdist_group("dask")

STATISTICS = ("fitted_values_", "residuals_", "robustness_weights_")
SCALARS = ("trace_hat_", "one_delta_", "two_delta_", "residual_scale_", "df_")


@pytest.fixture(scope="module")
def client():
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, memory_limit="2GB",
                      dashboard_address=":0") as cluster, Client(cluster) as client:  # fmt: skip
        yield client


def _data(d, n, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0.0, 10.0, (n, d))
    X[:, 0] *= 3.0
    y = np.sin(X).sum(axis=1) + 0.3 * rng.standard_t(3, n)
    return X, y


def _lazy(X, y, weights, chunks):
    return (da.from_array(X, chunks=(chunks, X.shape[1])), da.from_array(y, chunks=chunks),
            None if weights is None else da.from_array(weights, chunks=chunks))  # fmt: skip


def _close(actual, expected, tolerance=1e-10):
    expected = np.asarray(expected, dtype=float)
    scale = max(float(np.max(np.abs(expected))), 1.0)
    np.testing.assert_allclose(np.asarray(actual), expected, rtol=0, atol=tolerance * scale)


def _same_fit(ours, theirs, tolerance=1e-10):
    for name in STATISTICS:
        _close(getattr(ours, name), getattr(theirs, name), tolerance)
    for name in SCALARS:
        expected = pytest.approx(getattr(theirs, name), rel=tolerance, nan_ok=True)
        assert getattr(ours, name) == expected
    assert ours.span_ == theirs.span_
    _close(ours.divisor_, theirs.divisor_, 1e-14)


CASES = [
    # (d, rows, chunks, options)
    (1, 700, 250, dict(span=0.3, statistics="approximate")),
    (1, 4800, (1500, 1, 1799, 1500), dict(span=0.4, degree=1, family="symmetric")),
    (2, 900, 200, dict(span=0.2, family="symmetric", statistics="approximate")),
    (2, 4800, 1600, dict(span=0.1, degree=2)),
    (3, 800, 300, dict(span=0.5, degree=1, kernel="epanechnikov", statistics="approximate")),
    (2, 500, 130, dict(span=0.3, kernel="cosine", statistics="approximate")),  # every pair
    (1, 400, 90, dict(span=0.5, kernel="cosine", statistics="approximate")),
]


@pytest.mark.parametrize("d, n, chunks, options", CASES)
def test_equal_to_the_fit_in_memory(client, d, n, chunks, options):
    X, y = _data(d, n)
    weights = np.random.default_rng(1).uniform(0.5, 2.0, n)
    weights[::7] = 0.0  # left out, as in memory
    model = attnpool.Loess(**options)
    theirs = clone(model).fit(X, y, sample_weight=weights)
    ours = clone(model).fit(*_lazy(X, y, weights, chunks))
    assert isinstance(ours.fitted_values_, da.Array)
    _same_fit(ours, theirs, 1e-9 if d == 1 else 1e-10)
    queries = np.vstack([X[:30] + 0.01, X[100:110]])
    for lazy, direct in zip(ours.predict(queries, return_std=True),
                            theirs.predict(queries, return_std=True), strict=True):  # fmt: skip
        assert isinstance(lazy, np.ndarray)
        _close(lazy, direct, 1e-9)
    blocks = ours.predict(da.from_array(queries, chunks=(15, d)))
    assert isinstance(blocks, da.Array)
    _close(blocks.compute(), theirs.predict(queries), 1e-9)


@pytest.mark.parametrize("chunks", [150, 600])
def test_blocks_by_location(client, chunks):
    # rows sorted by location: most blocks lie beyond a query's reach, and with blocks of
    # 150 rows a neighbourhood (250) spans several; the radii's bounds hold either way
    X, y = _data(2, 1000, seed=6)
    order = np.argsort(X[:, 0])
    X, y = X[order], y[order]
    model = attnpool.Loess(span=0.25, degree=1, statistics="approximate")
    _same_fit(clone(model).fit(*_lazy(X, y, None, chunks)), clone(model).fit(X, y))


def test_radii_beyond_the_bands(client, monkeypatch):
    # bands of ten distances: most rows overflow theirs and take the k-d trees' lists
    from attnpool.distributed import neighbourhoods

    monkeypatch.setattr(neighbourhoods, "BAND", 1)
    X, y = _data(3, 800, seed=7)
    model = attnpool.Loess(span=0.05, degree=1, statistics="approximate")
    _same_fit(clone(model).fit(*_lazy(X, y, None, 200)), clone(model).fit(X, y))


@pytest.mark.parametrize("case", ["offset", "rounded", "constant", "outliers", "weights"])
def test_hostile_data(client, case):
    X, y = _data(2, 1200, seed=3)
    weights = None
    if case == "weights":  # subnormal prior weights: every fit was NaN
        weights = np.random.default_rng(4).uniform(0.5, 2.0, y.size) * 2.0**-1070
    elif case == "offset":  # huge offsets and unequal scales
        X = X * [1e-6, 1e4] + [1e9, -1e12]
    elif case == "rounded":  # ties everywhere, keys on every radius
        X, y = np.round(X), np.round(y, 1)
    elif case == "constant":
        y = np.full_like(y, 7.25)
    else:  # outliers the robustness iterations must down-weigh
        y[::50] += 40.0
    model = attnpool.Loess(span=0.25, family="symmetric", statistics="approximate")
    theirs = clone(model).fit(X, y, sample_weight=weights)
    ours = clone(model).fit(*_lazy(X, y, weights, 300))
    _same_fit(ours, theirs, 1e-9)
    if case == "outliers":
        assert np.all(ours.robustness_weights_.compute()[::50] < 0.1)
    if case == "constant":  # zero residuals have zero scale, not 0/0
        assert ours.residual_scale_ == theirs.residual_scale_ == 0.0


def test_exact_statistics_and_small_problems(client):
    # beyond 4000 rows δ₂'s estimate takes each row's own signs, wherever the row is;
    # below, the exact δ₂ needs the operator: the rows are gathered
    X, y = _data(1, 4600, seed=4)
    model = attnpool.Loess(span=0.2)
    _same_fit(clone(model).fit(*_lazy(X, y, None, 1000)), clone(model).fit(X, y), 1e-9)
    small = clone(model).fit(*_lazy(X[:300], y[:300], None, 100))
    _same_fit(small, clone(model).fit(X[:300], y[:300]), 1e-12)


def test_span_chosen_over_the_blocks(client):
    X, y = _data(1, 600, seed=5)
    model = attnpool.Loess(span="gcv", spans=[0.2, 0.4, 0.8], statistics="approximate")
    ours = clone(model).fit(*_lazy(X, y, None, 150))
    theirs = clone(model).fit(X, y)
    assert ours.span_ == theirs.span_
    _close(ours.criterion_, theirs.criterion_, 1e-10)
    # y ~ 1e-200: the squared residuals vanished (every span tied at 0, no residual scale)
    small = clone(model).fit(*_lazy(X, y * 1e-200, None, 150))
    assert small.span_ == ours.span_
    _close(small.residual_scale_ / 1e-200, ours.residual_scale_, 1e-12)
    _close(small.predict(X[:50]) / 1e-200, ours.predict(X[:50]), 1e-12)
    # tied rows: a span too small for them is passed over (it aborted the search)
    ties = np.repeat(np.arange(20.0), 30)[:, None]
    tied = attnpool.Loess(span="gcv", spans=[0.02, 0.2, 0.4], statistics="approximate")
    ours = clone(tied).fit(*_lazy(ties, y, None, 150))
    theirs = clone(tied).fit(ties, y)
    assert ours.span_ == theirs.span_ and ours.criterion_[0] == theirs.criterion_[0] == np.inf
    _close(ours.criterion_[1:], theirs.criterion_[1:], 1e-10)
    # a constant response: the largest span, as in memory
    with pytest.warns(ConstantResponseWarning, match="every span"):
        constant = clone(model).fit(*_lazy(X, np.full(600, -2.0), None, 150))
    assert constant.span_ == 0.8 and np.all(constant.criterion_ == 0.0)
    # classes apart: every span up to 0.5 fits each row to rounding; the largest, as in memory
    rng = np.random.default_rng(6)
    apart = np.r_[rng.normal(0.0, 1.0, 100), rng.normal(10.0, 1.0, 100)][:, None]
    labels = np.repeat([0.0, 1.0], 100)
    classes = attnpool.Loess(span="cv")
    with pytest.warns(attnpool.bandwidth.FlatCriterionWarning, match="every span up to 0.5"):
        ours = clone(classes).fit(*_lazy(apart, labels, None, 64))
    with pytest.warns(attnpool.bandwidth.FlatCriterionWarning, match="every span up to 0.5"):
        theirs = clone(classes).fit(apart, labels)
    assert ours.span_ == theirs.span_ == 0.5


def test_bad_inputs_are_clear_errors(client):
    X, y = _data(2, 300)
    bad = X.copy()
    bad[17, 1] = np.nan
    with pytest.raises(ValueError, match="X: expected finite numbers"):
        attnpool.Loess(statistics="approximate").fit(*_lazy(bad, y, None, 100))
    with pytest.raises(ValueError, match=r"y: expected shape \(300,\)"):
        attnpool.Loess(statistics="approximate").fit(da.from_array(X, chunks=(100, 2)), y[:-1])
    ties = np.repeat(np.arange(10.0), 30)[:, None]
    with pytest.raises(ValueError, match=r"span=0\.05 is too small"):
        attnpool.Loess(span=0.05, statistics="approximate").fit(*_lazy(ties, y, None, 100))
    one_point = np.tile([3.0, 3.0], (300, 1))
    with pytest.raises(ValueError, match=r"^X: every row is the same point \[3\.0, 3\.0\]"):
        attnpool.Loess(statistics="approximate").fit(*_lazy(one_point, y, None, 100))


def test_order_statistics_are_exact():
    rng = np.random.default_rng(2)
    values = np.concatenate([rng.normal(size=900) * 1e-3, rng.normal(size=300) * 1e6,
                             np.zeros(40), np.full(60, 2.5), [1e300, -1e-300]])  # fmt: skip
    blocks = [dask.delayed(b) for b in np.array_split(rng.permutation(values), 5)]
    ranks = [1, 2, 450, 901, 1240, 1300, 1302]
    found = order_statistics.order_statistics(blocks, ranks)
    np.testing.assert_array_equal(found, np.sort(values)[np.array(ranks) - 1])
    assert order_statistics.median(blocks, values.size) == np.median(values)
    X = np.column_stack([rng.normal(size=1001) * 1e5 + 1e9, np.round(rng.normal(size=1001))])
    rows = [dask.delayed(b) for b in np.array_split(X, 3)]
    _close(order_statistics.trimmed_scale(rows, 1001, 2, X.min(axis=0)), trimmed_scale(X), 1e-14)


def test_distance_counts_equal_brute_force():
    rng = np.random.default_rng(3)
    keys = np.sort(np.round(rng.normal(size=400), 1))
    queries = np.round(rng.normal(size=50), 1)
    points = np.abs(np.round(rng.normal(size=(50, 6)), 1))
    brute = np.sum(np.abs(keys[None, :, None] - queries[:, None, None]) <= points[:, None, :],
                   axis=1)  # fmt: skip
    np.testing.assert_array_equal(order_statistics.distance_counts(keys, queries, points), brute)
