"""Kernels of the great-circle distance (``with_norm(kernel, "haversine")``): pooling and
densities against the textbook formula with the haversine distance in NumPy float64,
densities against scikit-learn's ``metric="haversine"`` up to its planar constant and
integrating to one over the sphere, the nearest-key limit, invariance under rotations of
the sphere, gradients by finite differences, and the refusals."""

from __future__ import annotations

import math

import jax
import numpy as np
import pytest
from scipy import integrate
from scipy.stats import special_ortho_group
from sklearn.neighbors import KernelDensity as SklearnDensity

import attnpool
from attnpool.kernels import get, with_norm
from attnpool.kernels.calculus import kernel_integrals
from attnpool.kernels.sphere import arc_kernel, sphere_integrals

PROFILES = {
    "gaussian": lambda u: np.exp(-(u**2) / 2),
    "epanechnikov": lambda u: np.clip(1 - u**2, 0, None),
    "boxcar": lambda u: (u < 1).astype(float),
    "triangular": lambda u: np.clip(1 - u, 0, None),
}


def great_circle(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``(n, m)`` haversine distances of ``(latitude, longitude)`` rows (scikit-learn's)."""
    half_lat = (a[:, None, 0] - b[None, :, 0]) / 2
    half_lon = (a[:, None, 1] - b[None, :, 1]) / 2
    s = (
        np.sin(half_lat) ** 2
        + np.cos(a[:, None, 0]) * np.cos(b[None, :, 0]) * np.sin(half_lon) ** 2
    )
    return 2 * np.arcsin(np.sqrt(np.clip(s, 0, 1)))


def places(n: int, seed: int) -> np.ndarray:
    """Rows uniform on the sphere: ``(latitude, longitude)`` in radians."""
    rng = np.random.default_rng(seed)
    return np.c_[np.arcsin(rng.uniform(-1, 1, n)), rng.uniform(-math.pi, math.pi, n)]


def textbook(queries, keys, values, kernel, h):
    weights = PROFILES[kernel](great_circle(queries, keys) / h)
    with np.errstate(invalid="ignore"):
        return weights @ values / weights.sum(axis=1, keepdims=True)


def record(kernel: str):
    return with_norm(get(kernel), "haversine")


@pytest.mark.parametrize("kernel", list(PROFILES))
@pytest.mark.parametrize("h", [0.02, 0.4, 4.0])
@pytest.mark.parametrize("method", ["auto", "dense", "stream"])
def test_pooling_equals_the_textbook_formula_of_the_great_circle(kernel, h, method):
    queries, keys = places(30, 1), places(400, 2)
    values = np.stack([np.random.default_rng(3).normal(size=400), keys[:, 1]], axis=1)
    got = attnpool.attention_pool(queries, keys, values, kernel=record(kernel), bandwidth=h,
                                  method=method, empty="nan")  # fmt: skip
    want = textbook(queries, keys, values, kernel, h)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-11)


def test_a_small_bandwidth_looks_up_the_nearest_place_across_the_date_line():
    keys = np.array([[0.3, math.pi - 1e-4], [0.25, 0.0], [-0.2, -math.pi / 2]])
    queries = np.array([[0.3, -math.pi + 1e-4], [-0.21, -math.pi / 2 + 0.05], [math.pi / 2, 1.0]])
    values = np.array([1.0, 2.0, 3.0])
    nearest = values[np.argmin(great_circle(queries, keys), axis=1)]
    assert nearest[0] == 1.0  # 2e-4 rad away over the date line
    for kernel in ("gaussian", "epanechnikov"):
        got = attnpool.attention_pool(queries, keys, values, kernel=record(kernel),
                                      bandwidth=1e-9, empty="nearest")  # fmt: skip
        np.testing.assert_array_equal(got, nearest)


def test_pooling_is_invariant_under_rotations_of_the_sphere():
    queries, keys = places(20, 4), places(300, 5)
    values = np.random.default_rng(6).normal(size=300)
    rotation = special_ortho_group.rvs(3, random_state=7)

    def turned(rows):
        e = np.c_[np.cos(rows[:, 0]) * np.cos(rows[:, 1]), np.cos(rows[:, 0]) * np.sin(rows[:, 1]),
                  np.sin(rows[:, 0])] @ rotation.T  # fmt: skip
        return np.c_[np.arcsin(np.clip(e[:, 2], -1, 1)), np.arctan2(e[:, 1], e[:, 0])]

    kernel = record("epanechnikov")
    before = attnpool.attention_pool(queries, keys, values, kernel=kernel, bandwidth=0.5)
    after = attnpool.attention_pool(turned(queries), turned(keys), values, kernel=kernel,
                                    bandwidth=0.5)  # fmt: skip
    np.testing.assert_allclose(after, before, rtol=1e-10, atol=1e-12)
    turn = np.array([0.0, 2 * math.pi])
    shifted = attnpool.attention_pool(queries + turn, keys - 3 * turn,
                                      values, kernel=kernel, bandwidth=0.5)  # fmt: skip
    np.testing.assert_allclose(shifted, before, rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize(
    "kernel, theirs", [("gaussian", "gaussian"), ("epanechnikov", "epanechnikov"),
                       ("boxcar", "tophat")],
)  # fmt: skip
@pytest.mark.parametrize("h", [0.05, 0.3, 1.5])
def test_densities_are_scikit_learns_per_steradian(kernel, theirs, h):
    # scikit-learn sums the same weights and divides by the plane's constant h² ∫K(‖u‖)du
    x, q = places(500, 8), places(40, 9)
    ours = attnpool.kernel_density(x, q, kernel=record(kernel), bandwidth=h)
    model = SklearnDensity(kernel=theirs, bandwidth=h, metric="haversine").fit(x)
    plane = kernel_integrals(get(kernel), 2)[0] * h * h
    sphere = sphere_integrals(get(kernel), h)[0]
    want = np.exp(model.score_samples(q)) * plane / sphere
    np.testing.assert_allclose(ours, want, rtol=1e-9, atol=1e-12)  # its tree's rounding
    np.testing.assert_allclose(ours, textbook_density(x, q, kernel, h), rtol=1e-12, atol=1e-300)


def textbook_density(x, q, kernel, h):
    """The mean of ``K(θ/h)`` divided by ``2π ∫₀^π K(θ/h) sin θ dθ``."""
    cuts = [t for t in h * 2.0 ** np.arange(-3, 12) if t < math.pi]
    mass = 2 * math.pi * integrate.quad(lambda t: PROFILES[kernel](np.asarray(t / h)) * math.sin(t),
                                        0, math.pi, points=cuts, epsabs=0, epsrel=1e-13,
                                        limit=500)[0]  # fmt: skip
    return PROFILES[kernel](great_circle(q, x) / h).mean(axis=1) / mass


@pytest.mark.parametrize("kernel, h", [("gaussian", 0.3), ("gaussian", 1.0), ("gaussian", 4.0),
                                       ("epanechnikov", 0.8), ("epanechnikov", 2.5)])  # fmt: skip
def test_a_density_integrates_to_one_over_the_sphere(kernel, h):
    z, dz = np.polynomial.legendre.leggauss(300)  # z = sin(latitude): dA = dz dλ
    lon = (np.arange(400) + 0.5) * 2 * math.pi / 400 - math.pi
    grid = np.stack(np.meshgrid(np.arcsin(z), lon, indexing="ij"), axis=-1).reshape(-1, 2)
    area = np.repeat(dz, 400) * 2 * math.pi / 400
    x = places(30, 10)
    density = attnpool.kernel_density(x, grid, kernel=record(kernel), bandwidth=h)
    assert np.sum(density * area) == pytest.approx(1.0, rel=1e-6)


def test_the_constant_tends_to_the_planes_as_the_bandwidth_shrinks():
    for kernel in ("gaussian", "epanechnikov"):
        plane = kernel_integrals(get(kernel), 2)
        for h in (1e-5, 1e-150):
            first, second = sphere_integrals(get(kernel), h)
            assert first / (plane[0] * h * h) == pytest.approx(1.0, rel=1e-9)
            assert second / (plane[1] * h * h) == pytest.approx(1.0, rel=1e-9)
    # the whole sphere's area for a constant kernel
    assert sphere_integrals(get("constant"), 0.1)[0] == pytest.approx(4 * math.pi, rel=1e-12)
    # at h = 1e-300 the mass (2π h²) underflows; the log density does not: at a place of
    # its own among three, log(1 / (3 · 2π h²))
    cities = np.radians([[51.5, -0.13], [48.86, 2.35], [40.71, -74.0]])
    for h in (1e-300, 1e-8):
        got = attnpool.log_density(cities, cities[:1], kernel=record("gaussian"), bandwidth=h)
        assert got[0] == pytest.approx(-math.log(6 * math.pi) - 2 * math.log(h), rel=1e-14)


def test_the_estimator_scores_and_regresses_on_the_sphere():
    x, q = places(300, 11), places(10, 12)
    kernel = record("gaussian")
    model = attnpool.KernelDensity(kernel=kernel, bandwidth=0.4).fit(x)
    np.testing.assert_allclose(np.exp(model.score_samples(q)),
                               textbook_density(x, q, "gaussian", 0.4), rtol=1e-12)  # fmt: skip
    y = np.sin(x[:, 0]) + np.cos(x[:, 1])
    fitted = attnpool.NadarayaWatson(kernel=kernel, bandwidth=0.4).fit(x, y).predict(q)
    np.testing.assert_allclose(fitted, textbook(q, x, y[:, None], "gaussian", 0.4)[:, 0],
                               rtol=1e-12)  # fmt: skip


def test_gradients_with_respect_to_queries_keys_and_values_match_finite_differences():
    queries, keys = places(5, 13), places(60, 14)
    values = np.random.default_rng(15).normal(size=60)
    kernel = record("gaussian")
    with jax.enable_x64(True):

        def loss(q, k, v):
            return attnpool.attention_pool(q, k, v, kernel=kernel, bandwidth=0.6).sum()

        grads = jax.grad(loss, argnums=(0, 1, 2))(*map(jax.numpy.asarray, (queries, keys, values)))
        for index, point in enumerate((queries, keys, values)):
            step = np.zeros_like(point)
            flat = step.reshape(-1)
            for i in range(0, flat.size, 7):
                flat[:] = 0.0
                flat[i] = 1e-6
                args = [queries, keys, values]
                up = float(loss(*[a + step if j == index else a for j, a in enumerate(args)]))
                down = float(loss(*[a - step if j == index else a for j, a in enumerate(args)]))
                got = np.asarray(grads[index]).reshape(-1)[i]
                assert got == pytest.approx((up - down) / 2e-6, rel=1e-5, abs=1e-8)


def test_float32_rows_are_pooled_in_float32():
    queries, keys = places(10, 17).astype(np.float32), places(200, 18).astype(np.float32)
    values = np.random.default_rng(19).normal(size=200).astype(np.float32)
    got = attnpool.attention_pool(queries, keys, values, kernel=record("gaussian"), bandwidth=0.3)
    assert got.dtype == np.float32
    want = textbook(queries.astype(float), keys.astype(float), values[:, None], "gaussian", 0.3)
    np.testing.assert_allclose(got, want[:, 0], rtol=1e-5, atol=1e-6)


def test_arc_kernels_are_remembered_for_each_bandwidth():
    kernel = record("gaussian")
    assert arc_kernel(kernel, 0.25) is arc_kernel(kernel, 0.25)
    assert arc_kernel(kernel, 0.25) is not arc_kernel(kernel, 0.5)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda x, k: attnpool.attention_pool(np.degrees(x[:2]), x, x[:, 0], kernel=k,
                                              bandwidth=0.3), "queries: latitudes are radians"),
        (lambda x, k: attnpool.kernel_density(np.c_[x, x[:, :1]], x[:2], kernel=k,
                                              bandwidth=0.3), "x_train: the haversine.*shape"),
        (lambda x, k: attnpool.kernel_density(x, x[:2], kernel=k, bandwidth=[0.3, 0.4]),
         "bandwidth: a haversine kernel takes one"),
        (lambda x, k: attnpool.kernel_density(x, x[:2], kernel=k, bandwidth=0.3,
                                              var_type="cu"), "var_type: the haversine"),
        (lambda x, k: attnpool.KernelDensity(kernel=k).fit(x), "bandwidth: a haversine"),
        (lambda x, k: attnpool.KernelDensity(kernel=k, bandwidth=0.3).fit(x).sample(2),
         "kernel: sample draws"),
        (lambda x, k: attnpool.LocalLinear(kernel=k, bandwidth=0.3).fit(x, x[:, 0]).predict(x),
         "great-circle distances"),
        (lambda x, k: jax.grad(lambda h: attnpool.attention_pool(x, x, x[:, 0], kernel=k,
                                                                 bandwidth=h).sum())(0.3),
         "bandwidth: a haversine kernel takes a fixed"),
        (lambda x, k: with_norm(get("dot"), "haversine"), "kernel: the haversine distance"),
    ],
)  # fmt: skip
def test_refusals_name_the_argument(call, match):
    with pytest.raises(ValueError, match=match):
        call(places(20, 16), record("gaussian"))
