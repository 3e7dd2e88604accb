"""Sums at queries on a lattice from the keys' moments about their nearest nodes: against
the textbook's pair by pair on layouts that strain the bound (keys on nodes, mid-cell,
a cluster inside one cell, far tails), the bound never below the error and not far
above it, the loop against NumPy, the tables against dense sampling, and the plans
densities and pools take on a lattice."""

from __future__ import annotations

import math

import numpy as np
import pytest

from attnpool import Binned, kernel_density, kernels
from attnpool.methods import binned_host, binned_near, binned_taylor, native
from attnpool.methods.binned import Grid
from attnpool.methods.binned_gaussian import derivative
from attnpool.methods.binning import GridPlan
from reference import gaussian_kernel_sums as textbook

GAUSSIAN = kernels.get("gaussian")


def lattice_grid(keys, scale, spacing, margin=3.0):
    """A grid ``spacing`` apart over the scaled keys and ``margin`` beyond, and its nodes
    (unscaled): the queries."""
    d = keys.shape[1]
    low = keys.min(axis=0) * scale - margin
    size = np.ceil((keys.max(axis=0) * scale + margin - low) / spacing).astype(int) + 1
    grid = Grid(tuple(low), (spacing,) * d, tuple(int(s) for s in size))
    axes = [low[j] + spacing * np.arange(size[j]) for j in range(d)]
    nodes = np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, d) / scale
    return grid, nodes


def layout(name, d, rng):
    """Scaled keys: on the nodes of a spacing-0.5 lattice, at its cell midpoints, a
    cluster inside one cell beside normal points, or normal points with far outliers."""
    lattice = np.stack(np.meshgrid(*[np.arange(-6, 7) * 0.5] * d, indexing="ij"), -1)
    lattice = lattice.reshape(-1, d)
    if name == "on nodes":
        return lattice
    if name == "mid cell":
        return lattice + 0.25
    if name == "one cell":
        return np.r_[rng.normal(size=(300, d)) * 2, 1.1 + rng.uniform(0, 0.1, (300, d))]
    return np.r_[rng.normal(size=(600, d)) * 2, rng.uniform(-9, 9, (6, d))]


@pytest.mark.parametrize("d", [1, 2])
@pytest.mark.parametrize("name", ["on nodes", "mid cell", "one cell", "normal"])
@pytest.mark.parametrize("spacing", [0.5, 1.1])
@pytest.mark.parametrize("order", [1, 3, 6])
@pytest.mark.parametrize("taps", ["direct", "fft"])  # two columns: the taps summed or FFTs
def test_the_sums_never_err_beyond_their_bound(d, name, spacing, order, taps, monkeypatch):
    monkeypatch.setattr(binned_taylor, "TAPS_PER_FFT", math.inf if taps == "direct" else 0.0)
    if d == 1 and taps == "direct":
        return  # one column always takes the FFTs (the fft case runs it)
    rng = np.random.default_rng(d * 10 + order)
    keys = layout(name, d, rng)
    values = np.c_[rng.normal(size=len(keys)), 1e6 + rng.normal(size=len(keys))]
    scale = np.ones(d)
    grid, queries = lattice_grid(keys, scale, spacing)
    reach = tuple(min(int(np.ceil(9 / spacing)), s) for s in grid.size)
    values = values - 1e6 * (np.arange(2) == 1)  # the second column about its midrange
    plan = GridPlan(grid, reach, order=order)
    sums, error, binning = binned_taylor.taylor_sums(queries, keys, scale, plan, values)
    exact = textbook(queries, keys, scale, values)
    largest = np.max(np.abs(values))
    assert np.all(np.abs(sums[:, 0] - exact[:, 0]) <= error * (1 + 1e-12))
    for column in (1, 2):  # a value column errs by at most the bound times its largest value
        assert np.all(np.abs(sums[:, column] - exact[:, column]) <= error * largest * (1 + 1e-9))
    # not far above: within 100 times the error where the sums are large (and the error
    # is not rounding's: keys on the nodes are summed exactly)
    actual = np.abs(sums[:, 0] - exact[:, 0])
    body = (exact[:, 0] > 0.1 * exact[:, 0].max()) & (actual > 1e-10 * exact[:, 0])
    assert name in ("on nodes", "mid cell") or np.median(error[body] / actual[body]) < 100
    np.testing.assert_allclose(binning.counts.sum(), len(keys))


@pytest.mark.parametrize("values", [False, True])
def test_two_columns_sum_their_taps_directly_as_the_ffts_do(values, monkeypatch):
    # KDEpy's kind of grid, a cluster and an outlier: the taps summed directly and the
    # FFTs agree within their two bounds, and the direct bound, each node's rounding
    # relative to its own terms, is the tighter one far from the data
    rng = np.random.default_rng(8)
    keys = np.r_[rng.normal(size=(3000, 2)), rng.normal(3, 0.01, (200, 2)), [[9.0, -9.0]]]
    weights = rng.normal(size=(keys.shape[0], 1)) * 1e3 if values else None
    scale = np.full(2, 1 / 0.25)
    grid, queries = lattice_grid(keys, scale, 0.8)
    reach = tuple(min(int(np.ceil(9 / 0.8)), s) for s in grid.size)
    order = binned_taylor.plan(1e-3, np.full(2, 0.8), np.ptp(keys, axis=0) * scale,
                               keys.shape[0], 2**30)[0]  # fmt: skip
    found, plan = {}, GridPlan(grid, reach, order=order)
    for taps, per_fft in (("direct", math.inf), ("fft", 0.0)):
        monkeypatch.setattr(binned_taylor, "TAPS_PER_FFT", per_fft)
        found[taps] = binned_taylor.taylor_sums(queries, keys, scale, plan, weights)
    (direct, direct_error, _), (fft, fft_error, _) = found["direct"], found["fft"]
    largest = 1.0 if weights is None else max(1.0, float(np.max(np.abs(weights))))
    gap = np.abs(direct - fft).max(axis=1)
    assert np.all(gap <= (direct_error + fft_error) * largest * (1 + 1e-12))
    exact = textbook(queries, keys, scale, weights if values else np.zeros((len(keys), 0)))
    assert np.all(np.abs(direct[:, 0] - exact[:, 0]) <= direct_error * (1 + 1e-12))
    far = exact[:, 0] < 1e-6 * exact[:, 0].max()
    assert np.median(direct_error[far] / fft_error[far]) < 1e-3


@pytest.mark.parametrize("d", [1, 2])
def test_queries_off_their_nodes_are_bounded_as_well(d):
    # a lattice a rounding (or 1e-7 of a spacing) off the grid's nodes: still bounded
    rng = np.random.default_rng(7)
    keys = rng.normal(size=(500, d))
    scale = np.full(d, 1 / 0.4)
    grid, nodes = lattice_grid(keys, scale, 0.9)
    reach = tuple(min(11, s) for s in grid.size)
    for shift in (1e-15, 1e-7 * 0.9):
        queries = nodes + shift * rng.uniform(-1, 1, nodes.shape) / scale
        plan = GridPlan(grid, reach, order=4)
        sums, error, _ = binned_taylor.taylor_sums(queries, keys, scale, plan)
        exact = textbook(queries, keys, scale)[:, 0]
        assert np.all(np.abs(sums[:, 0] - exact) <= error * (1 + 1e-12))


@pytest.mark.parametrize("d", [1, 2])
@pytest.mark.parametrize("threaded", [False, True])
def test_the_loop_bins_as_numpy_does(d, threaded, monkeypatch):
    rng = np.random.default_rng(d)
    n = 300_000 if threaded else 4000
    keys = rng.normal(size=(n, d)) * 3
    features = np.c_[np.ones(n), rng.normal(size=(n, 2))]
    grid = Grid((-30.0,) * d, (0.37,) * d, (163,) * d)  # covers every key
    if threaded:
        monkeypatch.setattr(binned_taylor, "THREADED_KEYS", 2**14)
    scale = np.full(d, 1.5)
    by_loop = [binned_taylor._bin(keys, scale, grid, f, 4, True) for f in (None, features)]
    monkeypatch.setenv("ATTNPOOL_INSTRUCTION_SET", "none")
    assert native.expansion_function("taylor_bin") is None
    for f, (loop, cells, _) in zip((None, features), by_loop, strict=True):
        numpy, numpy_cells, _ = binned_taylor._bin(keys, scale, grid, f, 4, True)
        np.testing.assert_allclose(loop, numpy, rtol=1e-10, atol=1e-9)
        np.testing.assert_array_equal(cells, numpy_cells)
    # the moments of the counts: Σ t^α for |α| ≤ 4, then the remainder's Σ |t^α|
    counts, _, _ = by_loop[0]
    alphas = binned_taylor.moment_orders(4, d)
    position = (keys * scale - np.asarray(grid.start)) / 0.37
    t = position - np.floor(position + 0.5)
    assert np.all(np.abs(t) <= 0.5 + 1e-12)
    for k, alpha in enumerate(alphas):
        power = np.prod([t[:, j] ** a for j, a in enumerate(alpha)], axis=0)
        kept = k < len(alphas) - (1 if d == 1 else 6)
        total = counts[..., k].sum()
        np.testing.assert_allclose(total, power.sum() if kept else np.abs(power).sum(),
                                   rtol=1e-9, atol=1e-9)  # fmt: skip


@pytest.mark.parametrize("spacing", [0.2, 0.9, 2.5])
@pytest.mark.parametrize("order", [0, 1, 4, 7, 9])
def test_the_maxima_cover_their_boxes(spacing, order):
    # each table entry at least |φ^(k)| sampled densely over its box
    half = spacing / 2 + 1e-3
    table = binned_taylor.hermite_maxima(order, spacing, 12, half)
    for v in range(-12, 13):
        u = v * spacing + np.linspace(-half, half, 4001)
        sampled = np.max(np.abs(derivative(order, u)))
        assert sampled <= table[v + 12] <= sampled * (1 + 1e-6) + 1e-300


@pytest.mark.parametrize("d", [1, 2])
@pytest.mark.parametrize("tolerance", [1e-2, 1e-3, 1e-6])
def test_plans_meet_the_tolerance_at_least_cost(d, tolerance):
    step = np.full(d, 0.9)
    order, divisions = binned_taylor.plan(tolerance, step, np.full(d, 60.0), 10**6, 2**28)
    spacing = 0.9 / divisions[0]
    assert binned_taylor.relative_bound(order, spacing, d) <= tolerance / 2
    # one order fewer on the same grid would not do
    coarser = binned_taylor._rounded_up(spacing)  # the plans' spacings
    assert order == 1 or binned_taylor.relative_bound(order - 1, coarser, d) > tolerance / 2
    # the relative bound against keys spread evenly, pair by pair
    rng = np.random.default_rng(3)
    keys = rng.uniform(-12, 12, (8000 if d == 1 else 30_000, d))
    scale = np.ones(d)
    grid, queries = lattice_grid(keys, scale, spacing, margin=0.0)
    middle = np.all(np.abs(queries) < 2, axis=1)
    reach = tuple(min(int(np.ceil(10 / spacing)), s) for s in grid.size)
    plan = GridPlan(grid, reach, order=order)
    sums, error, _ = binned_taylor.taylor_sums(queries[middle], keys, scale, plan)
    exact = textbook(queries[middle], keys, scale)[:, 0]
    assert np.all(np.abs(sums[:, 0] - exact) <= tolerance * exact)
    assert np.median(error / exact) <= tolerance


@pytest.mark.parametrize("d", [1, 2])
def test_densities_and_pools_on_a_lattice_take_the_moments_and_meet_the_oracle(d):
    rng = np.random.default_rng(20 + d)
    x = np.r_[rng.normal(size=(40_000, d)), rng.normal(4, 0.01, (200, d))]
    axes = [np.linspace(-5, 6, 300 if d == 1 else 70)] * d
    queries = np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, d)
    scale = np.full(d, 1 / 0.08)
    plan = binned_host.plan_grid(queries, x, scale, GAUSSIAN, None, 1e-3)
    assert plan.order is not None
    ours = kernel_density(x, queries, bandwidth=0.08, method=Binned(tolerance=1e-3))
    exact = kernel_density(x, queries, bandwidth=0.08, method="native")
    assert np.all(np.abs(ours - exact) <= 1e-3 * exact)
    # pooling: each settled row within the tolerance times the values' range
    values = np.c_[np.sin(x[:, 0]), 1e9 + x[:, -1]]
    pooled, _, settled, _ = binned_host.binned_pool(queries, x, values, scale, GAUSSIAN)
    assert settled[exact > 1e-3 * exact.max()].mean() > 0.8  # most of the body
    some = rng.choice(np.flatnonzero(settled), 400)
    truth = textbook(queries[some], x, scale, values - 1e9 * (np.arange(2) == 1))
    truth = truth[:, 1:] / truth[:, :1] + 1e9 * (np.arange(2) == 1)
    spread = np.ptp(values, axis=0)
    assert np.all(np.abs(pooled[some] - truth) <= 1e-3 * spread * (1 + 1e-9))


def test_a_lattice_guessed_from_the_first_rows_still_meets_the_tolerance(monkeypatch):
    # the first rows on a lattice, the rest off it: no row is off by more than allowed
    from attnpool.methods import binned_gaussian

    rng = np.random.default_rng(61)
    keys = rng.normal(size=(3000, 1))
    queries = np.r_[np.linspace(-3, 3, 241)[:, None], rng.uniform(-3, 3, (500, 1))]
    monkeypatch.setattr(binned_gaussian, "LATTICE_ROWS", 241)
    ours = kernel_density(keys, queries, bandwidth=0.2, method=Binned(tolerance=1e-4))
    exact = kernel_density(keys, queries, bandwidth=0.2, method="native")
    assert np.all(np.abs(ours - exact) <= 1e-4 * exact)
    plan = binned_host.plan_grid(queries, keys, np.full(1, 5.0), GAUSSIAN, None, 1e-4)
    assert plan.order is None  # the moments need the queries on nodes


def test_the_remainder_is_the_taylor_remainder():
    # one key, one query: the bound is at least the error and the error is of order p + 1
    for order in (1, 2, 5):
        errors = []
        for t in (0.2, 0.1, 0.05):
            keys = np.array([[t]])
            grid = Grid((-10.0,), (1.0,), (21,))
            queries = np.array([[2.0]])
            sums, error, _ = binned_taylor.taylor_sums(
                queries, keys, np.ones(1), GridPlan(grid, (12,), order=order)
            )
            exact = math.exp(-0.5 * (2.0 - t) ** 2)
            assert abs(sums[0, 0] - exact) <= error[0]
            errors.append(abs(sums[0, 0] - exact))
        rates = np.log2(np.array(errors[:-1]) / np.array(errors[1:]))
        assert np.all(rates > order + 0.5)


def test_plans_keep_to_their_budget_of_numbers():
    # a lattice too fine for the budget at any order: no plan (linear binning's grid)
    step, extent = np.full(2, 0.9), np.full(2, 3000.0)
    assert binned_taylor.plan(1e-3, step, extent, 10**6, 2**22) is None
    order, divisions = binned_taylor.plan(1e-3, step, extent, 10**6, 2**30)
    nodes = np.prod(extent / (0.9 / divisions) + 2 * 9 / (0.9 / divisions) + 3)
    assert nodes * len(binned_taylor.moment_orders(order, 2)) <= 2**30
    with pytest.raises(ValueError, match="order: expected 0 to"):
        binned_taylor._bin(
            np.zeros((3, 1)), np.ones(1), Grid((0.0,), (1.0,), (4,)), None, 99, False
        )


@pytest.mark.parametrize("threaded", [False, True])
def test_the_binning_pass_finds_the_keys_beside_the_band(threaded, monkeypatch):
    # one column of counts: the indices of every key at most `below` or at least `above`,
    # each part of a threaded pass from its own first key
    if threaded:
        monkeypatch.setattr(binned_taylor, "THREADED_KEYS", 2**14)
    rng = np.random.default_rng(30)
    keys = rng.normal(size=(300_001, 1))
    keys[::1000] = np.round(keys[::1000], 1)  # ties on the band's edges too
    grid = Grid((-120.0,), (0.5,), (481,))
    band = (-2.9, 2.6)
    _, _, beside = binned_taylor._bin(keys, np.full(1, 20.0), grid, None, 1, False, band)
    want = np.flatnonzero((keys[:, 0] <= band[0]) | (keys[:, 0] >= band[1]))
    np.testing.assert_array_equal(np.sort(beside), want)
    # more than a share of the keys (uniform data, a wide bandwidth): none recorded, the
    # rows take the full pass rather than the pass writing an index for every key
    wide = (-1.5, 1.5)
    assert (
        np.sum((keys[:, 0] <= -1.5) | (keys[:, 0] >= 1.5)) > len(keys) / binned_taylor.BESIDE_SHARE
    )
    assert binned_taylor._bin(keys, np.full(1, 20.0), grid, None, 1, False, wide)[2] is None


@pytest.mark.parametrize("inside", [False, True])
def test_rows_beyond_the_data_sum_over_the_keys_beside_its_ends(inside):
    # KDEpy's game: a lattice past both ends of the data; the rows there are summed over
    # the keys the binning pass found beside the ends, the same keys a full pass finds.
    # A row inside the data that the bound leaves unsettled takes the full pass.
    rng = np.random.default_rng(31)
    x = rng.normal(size=(200_000, 1))
    queries = np.linspace(-6.5, 6.5, 1024)[:, None]
    scale = np.full(1, 1 / 0.05)
    plan = binned_host.plan_grid(queries, x, scale, GAUSSIAN, None, 1e-3)
    _, _, binning = binned_host.binned_sums(queries, x, scale, GAUSSIAN, plan)
    assert binning.beside is not None and binning.beside[0].size < 1000  # the tails' keys
    rows = np.r_[np.linspace(-6.5, -5.2, 20), np.linspace(5.2, 6.5, 20)]
    if inside:
        rows = np.r_[rows, 0.3]
    rows = rows[:, None] * scale
    near = binned_near.keys_near(rows, GAUSSIAN, binning, x.shape[0], None, x, scale)
    full = binned_near.keys_near(rows, GAUSSIAN, binning._replace(beside=None), x.shape[0],
                                 None, x, scale)  # fmt: skip
    np.testing.assert_array_equal(np.sort(near), np.sort(full))
    assert (near.size > 1000) == inside
    # the rows beyond the data take their keys from those beside only
    none_beside = binning._replace(beside=(np.zeros(0, np.int64), *binning.beside[1:]))
    taken = binned_near.keys_near(rows, GAUSSIAN, none_beside, x.shape[0], None, x, scale)
    assert (taken.size == 0) != inside
    got = kernel_density(x, queries, bandwidth=0.05, method=Binned(tolerance=1e-3))
    exact = kernel_density(x, queries, bandwidth=0.05, method="fgt")
    np.testing.assert_array_less(np.abs(got - exact), 1e-3 * exact)
