"""Kernels of Minkowski norms (``kernels.with_norm``): pooling against the textbook formula
with ``‖u‖_p``, densities against KDEpy's ``NaiveKDE(norm=p)`` and scikit-learn's metrics,
the nearest-key limit and the support's edge in the norm, and the methods that refuse."""

from __future__ import annotations

import math

import numpy as np
import pytest
from KDEpy import NaiveKDE
from sklearn.neighbors import KernelDensity as SklearnDensity

import attnpool
from attnpool.kernels import get, with_norm

PROFILES = {
    "gaussian": lambda r: np.exp(-(r**2) / 2),
    "epanechnikov": lambda r: np.clip(1 - r**2, 0, None),
    "laplacian": lambda r: np.exp(-r),
    "tricube": lambda r: np.clip(1 - r**3, 0, None) ** 3,
}


def minkowski(u, p):
    u = np.abs(u)
    return u.max(axis=-1) if p == math.inf else (u**p).sum(axis=-1) ** (1 / p)


def textbook(queries, keys, values, kernel, p, h):
    weights = PROFILES[kernel](minkowski((queries[:, None, :] - keys[None]) / h, p))
    with np.errstate(invalid="ignore"):
        return weights @ values / weights.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("kernel", list(PROFILES))
@pytest.mark.parametrize("p", [1, 1.5, 3, math.inf])
@pytest.mark.parametrize("method", ["dense", "stream", "pallas", "auto"])
def test_pooling_equals_the_textbook_formula_in_the_norm(kernel, p, method):
    rng = np.random.default_rng(2)
    queries, keys = rng.uniform(0, 3, (40, 3)), rng.uniform(0, 3, (300, 3))
    values = np.stack([rng.normal(size=300), keys[:, 0]], axis=1)
    record = with_norm(get(kernel), p)
    got = attnpool.attention_pool(queries, keys, values, kernel=record, bandwidth=0.8,
                                  method=method, empty="nan")  # fmt: skip
    want = textbook(queries, keys, values, kernel, p, 0.8)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    "kernel, theirs", [("gaussian", "gaussian"), ("laplacian", "exponential"),
                       ("epanechnikov", "epa"), ("tricube", "tricube"), ("biweight", "biweight")],
)  # fmt: skip
@pytest.mark.parametrize("p", [1, 1.5, 3])
def test_densities_equal_kdepy_with_its_norm(kernel, theirs, p):
    # KDEpy's bandwidth is the kernel's standard deviation; its constants integrate over
    # the norm's balls, as ours do
    rng = np.random.default_rng(1)
    x, q = rng.normal(size=(300, 2)), rng.normal(size=(25, 2))
    h = 0.5
    ours = attnpool.kernel_density(x, q, kernel=with_norm(get(kernel), p), bandwidth=h)
    sd = attnpool.kernels.standard_deviation(kernel)
    want = NaiveKDE(kernel=theirs, bw=h * sd, norm=p).fit(x).evaluate(q)
    np.testing.assert_allclose(ours, want, rtol=1e-10, atol=1e-12 * want.max())


@pytest.mark.parametrize("metric, p", [("manhattan", 1), ("chebyshev", math.inf)])
def test_scikit_learns_metrics_sum_the_same_weights(metric, p):
    # scikit-learn normalises every metric as the Euclidean one (its documented caveat):
    # the sums agree, the constants differ by the balls' volumes
    rng = np.random.default_rng(4)
    x, q = rng.normal(size=(400, 3)), rng.normal(size=(30, 3))
    ours = attnpool.kernel_density(x, q, kernel=with_norm(get("gaussian"), metric), bandwidth=0.6)
    theirs = np.exp(SklearnDensity(bandwidth=0.6, metric=metric, algorithm="ball_tree")
                    .fit(x).score_samples(q))  # fmt: skip
    ratio = ours / theirs
    np.testing.assert_allclose(ratio, ratio[0], rtol=1e-10)
    euclidean_integral = (2 * math.pi) ** 1.5
    ours_integral = attnpool.kernels.calculus.kernel_integrals(with_norm(get("gaussian"), p), 3)[0]
    assert ratio[0] == pytest.approx(euclidean_integral / ours_integral, rel=1e-7)


def test_the_nearest_key_and_the_edge_are_the_norms():
    # Manhattan's nearest key is not the Euclidean one: the nearest-key limit follows it
    keys = np.array([[0.9, 0.0], [0.6, 0.6]])
    values = np.array([1.0, 2.0])
    manhattan_gaussian = with_norm(get("gaussian"), 1)
    origin = [[0.0, 0.0]]
    for method in ("auto", "dense", "stream", "pallas"):
        manhattan = attnpool.attention_pool(
            origin, keys, values, bandwidth=1e-6, kernel=manhattan_gaussian, method=method
        )
        euclidean = attnpool.attention_pool(origin, keys, values, bandwidth=1e-6, method=method)
        assert manhattan[0] == 1.0 and euclidean[0] == 2.0
    # keys exactly on the unit Manhattan sphere count alike on every path
    grid = np.arange(-2.0, 3.0)
    keys = np.stack(np.meshgrid(grid, grid), -1).reshape(-1, 2)
    record = with_norm(get("boxcar"), "manhattan")
    found = [
        attnpool.attention_pool(keys, keys, np.arange(25.0), kernel=record, bandwidth=1.0, method=m)
        for m in ("auto", "dense", "stream", "pallas")
    ]
    for other in found[1:]:
        np.testing.assert_allclose(other, found[0], rtol=1e-14)


@pytest.mark.parametrize("method", ["sparse", "fgt", "native", "binned", "tree", "fused"])
def test_the_euclidean_methods_refuse_a_norm(method):
    record = with_norm(get("gaussian" if method != "sparse" else "epanechnikov"), 1)
    with pytest.raises(ValueError, match="method:"):
        attnpool.attention_pool(np.zeros((2, 1)), np.arange(6.0)[:, None], np.arange(6.0),
                                kernel=record, method=method)  # fmt: skip


def test_estimators_take_a_norm():
    rng = np.random.default_rng(5)
    x = rng.uniform(0, 3, (200, 2))
    y = np.sin(x).sum(axis=1)
    record = with_norm(get("epanechnikov"), 1)
    small = attnpool.NadarayaWatson(kernel=record, bandwidth=0.7).fit(x, y).predict(x[:10])
    want = textbook(x[:10], x, y[:, None], "epanechnikov", 1, 0.7)[:, 0]
    np.testing.assert_allclose(small, want, rtol=1e-12)
    density = attnpool.KernelDensity(kernel=record, bandwidth=0.7).fit(x)
    np.testing.assert_allclose(np.exp(density.score_samples(x[:5])),
                               attnpool.kernel_density(x, x[:5], kernel=record, bandwidth=0.7),
                               rtol=1e-13)  # fmt: skip


@pytest.mark.parametrize(
    "kernel, norm, message",
    [
        ("gaussian", 0.5, "p >= 1"),
        ("gaussian", "hamming", "norm: expected a number"),
        ("epanechnikov-product", 1, "radial"),
        ("dot", 1, "radial"),
    ],
)
def test_bad_norms_name_the_argument(kernel, norm, message):
    with pytest.raises(ValueError, match=message):
        with_norm(get(kernel), norm)


def test_a_kernel_is_named_as_everywhere_else():
    """``with_norm("epanechnikov", 1)`` raised ``AttributeError`` ('str' object has no
    attribute 'similarity'): the kernel is resolved as every function resolves it, and
    the density of each norm still integrates to one."""
    assert with_norm("epanechnikov", 1) == with_norm(get("epanechnikov"), 1)
    assert with_norm("gaussian", "haversine").norm == "haversine"
    with pytest.raises(ValueError, match="kernel: unknown kernel 'nope'"):
        with_norm("nope", 1)
    x = np.random.default_rng(0).normal(size=(5, 2)) * 0.3
    grid = np.arange(-3, 3, 0.01) + 0.005
    points = np.stack(np.meshgrid(grid, grid), -1).reshape(-1, 2)
    for p in (1, 3, math.inf):
        density = attnpool.kernel_density(x, points, kernel=with_norm("triangular", p),
                                          bandwidth=0.5)  # fmt: skip
        assert np.sum(density) * 0.01**2 == pytest.approx(1.0, abs=1e-3)  # (the grid)
