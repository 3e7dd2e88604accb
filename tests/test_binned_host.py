"""The binned method on the host: binning by the compiled loop and by NumPy, the error
bound's window filters against SciPy's, and binned densities held to the exact ones on
hostile data."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.ndimage import maximum_filter1d, uniform_filter1d

from attnpool import Binned, kernels, log_density
from attnpool.methods import binned_bound, binning, native
from attnpool.methods.binned import Grid


def grid_over(points, spacing):
    low, high = points.min(axis=0) - spacing, points.max(axis=0) + spacing
    size = np.ceil((high - low) / spacing).astype(int) + 2
    return Grid(tuple(low), tuple(np.full(points.shape[1], spacing)), tuple(int(s) for s in size))


@pytest.mark.parametrize("d", [1, 2])
def test_binning_by_the_loop_equals_numpy_and_keeps_every_feature(d, monkeypatch):
    rng = np.random.default_rng(d)
    points = rng.normal(size=(5000, d)) * 3
    features = rng.normal(size=(5000, 3))
    grid = grid_over(points * 2.0, 0.37)
    compiled, cells = binning.bin_points(points, 2.0, grid, features, cells=True)
    counts, _ = binning.bin_points(points, 2.0, grid)
    placed = [binning.bin_points(points, 2.0, grid, f, moments=True)[0]
              for f in (None, features)]  # fmt: skip
    monkeypatch.setenv("ATTNPOOL_INSTRUCTION_SET", "none")
    assert native.expansion_function("linear_bin") is None
    by_numpy, numpy_cells = binning.bin_points(points, 2.0, grid, features, cells=True)
    np.testing.assert_allclose(compiled, by_numpy, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(cells, numpy_cells)
    for f, loop in zip((None, features), placed, strict=True):
        # the moments: each feature, then it times the point's a·b in its cell per dimension
        by_numpy, _ = binning.bin_points(points, 2.0, grid, f, moments=True)
        np.testing.assert_allclose(loop, by_numpy, rtol=1e-12, atol=1e-12)
        width = 1 if f is None else 3
        assert loop.shape[-1] == width * (1 + d)
        np.testing.assert_array_equal(loop[..., :width], counts if f is None else compiled)
        fraction = ((points * 2.0 - np.asarray(grid.start)) / np.asarray(grid.spacing)) % 1
        place = fraction * (1 - fraction) * np.asarray(grid.spacing) ** 2  # (n, d)
        weight = np.ones((5000, 1)) if f is None else f
        for j in range(d):
            total = loop[..., width * (j + 1) : width * (j + 2)].sum(axis=tuple(range(d)))
            np.testing.assert_allclose(total, (weight * place[:, j, None]).sum(axis=0), rtol=1e-9)
    # linear binning keeps each feature's total and its first moment
    np.testing.assert_allclose(compiled.sum(axis=tuple(range(d))), features.sum(axis=0))
    np.testing.assert_allclose(counts.sum(), 5000.0)
    axes = [g0 + s * np.arange(n) for g0, s, n in zip(*grid, strict=True)]
    nodes = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1)
    np.testing.assert_allclose(np.tensordot(counts[..., 0], nodes, axes=d),
                               (points * 2.0).sum(axis=0), rtol=1e-10)  # fmt: skip


@pytest.mark.parametrize("width", [1, 3, 17, 131, 255])
def test_the_bounds_window_filters_equal_scipys(width):
    table = np.random.default_rng(width).normal(size=500)
    np.testing.assert_array_equal(binned_bound._window_max(table, width),
                                  maximum_filter1d(table, width, mode="mirror"))  # fmt: skip
    # sums of a kernel's tails (200 decades): each window summed term by term (SciPy's
    # uniform filter differences running sums, and loses the small windows)
    positive = np.abs(table) * np.logspace(0, -200, 500)
    mirrored = np.pad(positive, width // 2, mode="reflect")
    windows = np.lib.stride_tricks.sliding_window_view(mirrored, width)
    np.testing.assert_allclose(binned_bound._window_sum(positive, width),
                               windows.sum(axis=1), rtol=1e-13, atol=0)  # fmt: skip
    np.testing.assert_allclose(binned_bound._window_sum(table, width),
                               uniform_filter1d(table, width, mode="mirror") * width,
                               rtol=1e-9, atol=1e-12)  # fmt: skip


@pytest.mark.parametrize(
    "kernel, tolerance, d",
    [("boxcar", 1e-3, 1), ("epanechnikov", 1e-6, 1), ("triangular", 1e-4, 2), ("gaussian", 1e-6, 1),
     ("cosine", 1e-5, 2)],
)  # fmt: skip
def test_the_grid_search_meets_half_the_tolerance_within_its_precision(kernel, tolerance, d):
    # the nodes per bandwidth found: the bound there is half the tolerance or less, and
    # 0.3% fewer nodes would not do (the bound falls with the nodes)
    kernel = kernels.get(kernel)
    nodes = binned_bound.nodes_for(kernel, tolerance, d)
    assert binned_bound.relative_bound(kernel, nodes, d) <= tolerance / 2
    assert binned_bound.relative_bound(kernel, nodes / binned_bound.PRECISION, d) > tolerance / 2
    # more than the most it may take: infinitely many (the grid is hopeless); just fewer
    # (the doubling passes the most): found all the same
    assert binned_bound.nodes_for(kernel, tolerance, d, most=nodes / 2) == np.inf
    assert nodes / 1.01 < binned_bound.nodes_for(kernel, tolerance, d, most=nodes * 1.01) < np.inf


@pytest.mark.parametrize("kernel", ["gaussian", "laplacian", "tricube"])
@pytest.mark.parametrize("d", [1, 2])
@pytest.mark.parametrize("offset", [0.0, 1.7e9])
def test_binned_densities_meet_their_tolerance_on_hostile_data(kernel, d, offset):
    # clusters, a far outlier, tails beyond the data and Unix-time offsets: every
    # density within its tolerance of the exact one, or summed exactly
    rng = np.random.default_rng(20 + d)
    x = np.concatenate([rng.normal(0, 1, (20_000, d)), rng.normal(4, 0.01, (500, d)),
                        np.full((1, d), 40.0)]) + offset  # fmt: skip
    q = np.concatenate([rng.uniform(-5, 9, (300, d)), np.full((1, d), 39.9)]) + offset
    exact = log_density(x, q, kernel=kernel, bandwidth=0.2, method="stream")
    for tolerance in (1e-3, 1e-6):
        got = log_density(x, q, kernel=kernel, bandwidth=0.2, method=Binned(tolerance=tolerance))
        assert np.array_equal(np.isfinite(got), np.isfinite(exact))
        finite = np.isfinite(exact)
        assert np.all(np.abs(np.expm1(got[finite] - exact[finite])) <= tolerance)


def _weighted_textbook(x, q, w, h):
    """The weighted Gaussian density by its formula, pair by pair in float64."""
    d = x.shape[1]
    squared = np.sum(((q[:, None, :] - x[None]) / h) ** 2, axis=-1)
    kernel = np.exp(-0.5 * squared) / (2 * np.pi) ** (d / 2) / h**d
    return kernel @ w / w.sum()


@pytest.mark.parametrize("d", [1, 2])
@pytest.mark.parametrize("kernel", ["gaussian", "epanechnikov", "tricube"])
def test_weighted_binned_densities_meet_their_tolerance(d, kernel):
    # each key counted by its weight (weights spread over 300×, some zero), a row's
    # density within the tolerance of the exact weighted one, empty rows empty
    rng = np.random.default_rng(10 + d)
    x = rng.normal(size=(20000, d))
    w = rng.uniform(0.01, 3.0, x.shape[0])
    w[::7] = 0.0
    q = np.concatenate([rng.normal(size=(300, d)) * 1.5, np.full((2, d), 40.0)])
    exact = log_density(x, q, kernel=kernel, bandwidth=0.3, weights=w)
    for tolerance in (1e-3, 1e-6):
        binned = log_density(x, q, kernel=kernel, bandwidth=0.3, weights=w,
                             method=Binned(tolerance=tolerance))  # fmt: skip
        finite = np.isfinite(exact)
        np.testing.assert_array_equal(np.isfinite(binned), finite)
        assert np.all(np.abs(np.expm1(binned[finite] - exact[finite])) <= tolerance)
    if kernel == "gaussian" and d == 1:
        np.testing.assert_allclose(np.exp(exact[:50]), _weighted_textbook(x, q[:50], w, 0.3),
                                   rtol=1e-12)  # fmt: skip


def test_weighted_binned_densities_on_a_lattice_of_queries():
    rng = np.random.default_rng(12)
    x = rng.normal(size=(20000, 1))
    w = rng.uniform(0.5, 2.0, x.shape[0])
    grid = np.linspace(-3.0, 3.0, 2000)[:, None]  # the Taylor sums at the nodes
    exact = log_density(x, grid, bandwidth=0.3, weights=w)
    binned = log_density(x, grid, bandwidth=0.3, weights=w, method="binned")
    assert np.all(np.abs(np.expm1(binned - exact)) <= 1e-3)
    unweighted = log_density(x, grid, bandwidth=0.3, method="binned")
    same = log_density(x, grid, bandwidth=0.3, weights=np.full(x.shape[0], 2.5), method="binned")
    np.testing.assert_allclose(same, unweighted, rtol=0, atol=1e-12)
