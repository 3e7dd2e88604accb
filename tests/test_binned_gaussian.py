"""The Gaussian's corrected binning: its sums against the textbook's on layouts chosen to
strain the bound (keys on the nodes and mid-cell, a cluster inside one cell, queries on
and off the nodes, unequal spacings), the bound never below the error and not far above
it, the tables it is built from, and the query lattices it aligns its grid with."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnpool import Binned, kernel_density, kernels
from attnpool.methods import binned_gaussian, binned_host, binning
from attnpool.methods.binned import Grid, reach_for
from attnpool.methods.binning import GridPlan
from reference import gaussian_kernel_sums as textbook

GAUSSIAN = kernels.get("gaussian")


def grid_over(points, spacing):
    """A grid ``spacing (d,)`` apart over scaled ``points``, one node beyond each side."""
    low, high = points.min(axis=0) - spacing, points.max(axis=0) + spacing
    size = np.ceil((high - low) / spacing).astype(int) + 2
    return Grid(tuple(low), tuple(spacing), tuple(int(s) for s in size))


def nodes_of(grid):
    axes = [s0 + h * np.arange(n) for s0, h, n in zip(*grid, strict=True)]
    return np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, len(axes))


def layout(name, d, rng):
    """Scaled keys: on the nodes of a spacing-0.25 lattice, at its cell midpoints, a
    cluster inside one cell beside normal points, or normal points."""
    lattice = np.stack(np.meshgrid(*[np.arange(-12, 13) * 0.25] * d, indexing="ij"), -1)
    lattice = lattice.reshape(-1, d)
    if name == "on nodes":
        return lattice
    if name == "mid cell":
        return lattice[:-1] + 0.125
    if name == "one cell":
        return np.r_[rng.normal(size=(400, d)) * 2, 1.1 + rng.uniform(0, 0.2, (400, d))]
    return rng.normal(size=(800, d)) * 2


@pytest.mark.parametrize("d", [1, 2])
@pytest.mark.parametrize("name", ["on nodes", "mid cell", "one cell", "normal"])
@pytest.mark.parametrize("spacing", [0.25, 0.6])
def test_the_corrected_sums_never_err_beyond_their_bound(d, name, spacing):
    rng = np.random.default_rng(len(name) + d)
    keys = layout(name, d, rng)
    scale = np.array([1.0, 2.5][:d])  # unequal spacings in bandwidths when d = 2
    keys = keys / scale
    grid = grid_over(np.r_[keys * scale, [[-7.0] * d, [7.0] * d]], np.full(d, spacing))
    queries = np.r_[rng.uniform(-7, 7, (300, d)) / scale, keys[::7],
                    nodes_of(grid)[::97] / scale]  # fmt: skip
    reach = reach_for(GAUSSIAN, np.ones(d), grid)
    values = rng.normal(size=(keys.shape[0], 2)) * [1.0, 1e3]
    plan = GridPlan(grid, reach)
    sums, error, _ = binned_gaussian.gaussian_sums(queries, keys, scale, plan, values)
    exact = textbook(queries, keys, scale, values)
    largest = np.r_[1.0, np.abs(values).max(axis=0)]
    assert np.all(np.abs(sums - exact) <= error[:, None] * largest * (1 + 1e-12) + 1e-300)
    # and the bound is not vacuous where the sums are large: near its value on keys
    # spread evenly (the grid is chosen by that)
    core = exact[:, 0] > 0.1 * exact[:, 0].max()
    typical = binned_gaussian.relative_bound(spacing, d)
    assert np.all(error[core] < 3 * typical * exact[core, 0])


@settings(max_examples=60, deadline=None)
@given(
    d=st.sampled_from([1, 2]),
    count=st.integers(1, 40),
    spacing=st.floats(0.05, 0.9),
    spread=st.floats(0.01, 6.0),
    seed=st.integers(0, 2**16),
)
def test_the_bound_holds_for_any_layout(d, count, spacing, spread, seed):
    rng = np.random.default_rng(seed)
    keys = rng.normal(size=(count, d)) * spread
    queries = np.r_[rng.normal(size=(20, d)) * spread * 1.5, keys[:3]]
    grid = grid_over(np.r_[keys, queries], np.full(d, spacing))
    reach = reach_for(GAUSSIAN, np.ones(d), grid)
    sums, error, _ = binned_gaussian.gaussian_sums(queries, keys, np.ones(d), GridPlan(grid, reach))
    exact = textbook(queries, keys, np.ones(d))[:, 0]
    assert np.all(np.abs(sums[:, 0] - exact) <= error * (1 + 1e-12) + 1e-300)


def test_the_derivatives_are_the_gaussians():
    t = np.linspace(-6, 6, 241)
    phi = np.exp(-0.5 * t * t)
    np.testing.assert_allclose(binned_gaussian.derivative(0, t), phi)
    np.testing.assert_allclose(binned_gaussian.derivative(2, t), (t * t - 1) * phi, atol=1e-15)
    np.testing.assert_allclose(binned_gaussian.derivative(4, t), (t**4 - 6 * t**2 + 3) * phi,
                               atol=1e-14)  # fmt: skip
    step = 1e-5
    for k in range(1, 6):
        slope = (binned_gaussian.derivative(k - 1, t + step)
                 - binned_gaussian.derivative(k - 1, t - step)) / (2 * step)  # fmt: skip
        np.testing.assert_allclose(binned_gaussian.derivative(k, t), slope, atol=1e-8)
    for k, roots in enumerate(binned_gaussian.CRITICAL):  # where |φ⁽ᵏ⁾| turns
        np.testing.assert_allclose(binned_gaussian.derivative(k + 1, np.array(roots)), 0,
                                   atol=1e-14)  # fmt: skip


@pytest.mark.parametrize("spacing", [0.07, 0.3, 1.1])
def test_the_box_maxima_cover_their_boxes(spacing):
    span = int(np.ceil(9 / spacing))
    maxima = binned_gaussian.box_maxima(spacing, span)
    for v in range(-span, span + 1, max(1, span // 40)):
        t = np.linspace((v - 2) * spacing, (v + 2) * spacing, 4001)
        for k in range(5):
            truth = np.max(np.abs(binned_gaussian.derivative(k, t)))
            assert truth <= maxima[k, v + span] <= truth * (1 + 1e-6)


@pytest.mark.parametrize("d", [1, 2])
@pytest.mark.parametrize("queries", binned_gaussian.QUERY_MODES)
@pytest.mark.parametrize("tolerance", [1e-2, 1e-5])
def test_nodes_per_bandwidth_meet_the_tolerance_without_waste(d, queries, tolerance):
    nodes = binned_gaussian.nodes_for(tolerance, d, queries)
    bound = binned_gaussian.relative_bound(1 / nodes, d, queries)
    assert 0.95 * tolerance / 2 <= bound <= tolerance / 2
    # the third-order bound needs fewer nodes than the second-order one (far fewer
    # where the queries' own error is corrected or absent)
    from attnpool.methods.binned_bound import nodes_for

    assert nodes < nodes_for(GAUSSIAN, tolerance, d) / (1 if queries == "bounded" else 2)


def test_query_lattices_are_found_and_scattered_queries_are_not():
    axes = np.linspace(-3.2, 4.1, 57), np.linspace(10.0, 11.0, 33)
    mesh = np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, 2)
    origin, step = binned_gaussian.lattice(mesh)
    np.testing.assert_allclose(origin, [-3.2, 10.0])
    np.testing.assert_allclose(step, [7.3 / 56, 1 / 32])
    assert binned_gaussian.lattice(axes[0][:, None]) is not None
    rng = np.random.default_rng(3)
    assert binned_gaussian.lattice(rng.normal(size=(500, 2))) is None
    jittered = mesh.copy()
    jittered[1000, 1] += 1e-3 / 32
    assert binned_gaussian.lattice(jittered) is None
    assert binned_gaussian.lattice(np.zeros((10, 1))) is None  # one value: no step


@pytest.mark.parametrize("d", [1, 2])
def test_densities_on_a_lattice_put_its_points_on_nodes_and_meet_the_tolerance(d):
    rng = np.random.default_rng(40 + d)
    x = np.r_[rng.normal(size=(30_000, d)), rng.normal(3, 0.02, (300, d))]
    axes = [np.linspace(-4.5, 4.5, 61 if d == 2 else 400)] * d
    queries = np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, d)
    scale = np.full(d, 1 / 0.1)
    grid = binned_host.plan_grid(queries, x, scale, GAUSSIAN, None, 1e-3).grid
    places = binning.second_moments(queries * scale, grid)
    assert np.all(places <= binned_gaussian.ON_NODE * np.asarray(grid.spacing) ** 2)
    ours = kernel_density(x, queries, bandwidth=0.1, method=Binned(tolerance=1e-3))
    exact = kernel_density(x, queries, bandwidth=0.1, method="native")
    assert np.all(np.abs(ours - exact) <= 1e-3 * exact)


@pytest.mark.parametrize("spacing", [0.3, 2.5])
def test_what_the_reach_leaves_out_is_bounded(spacing):
    # the most a pair adds beyond the reach, against K + ¼ Σ Δ² |K_jj| sampled there
    for reach in (2, 3, 6, 40):
        r = np.linspace((reach - binned_gaussian.BOX) * spacing, 60.0, 20_001)
        r = r[r >= 0]
        phi = np.exp(-0.5 * r * r)
        sampled = np.max(phi * (1 + 0.25 * 2 * spacing**2 * np.abs(r * r - 1)))
        assert sampled <= binned_gaussian.outside([spacing] * 2, [reach] * 2, [100] * 2)
    assert binned_gaussian.outside([spacing], [99], [100]) == 0.0  # the reach spans it


@pytest.mark.parametrize("d", [1, 2])
def test_many_queries_get_a_finer_grid_and_their_error_bounded(d):
    # queries many times the nodes of the grid that bounds their interpolation: that
    # grid, their second-order sums left in, every row within its tolerance or exact
    rng = np.random.default_rng(50 + d)
    keys = rng.normal(size=(2000, d))
    queries = rng.normal(size=(60_000 if d == 1 else 400_000, d)) * 1.2
    scale = np.full(d, 1 / (0.3 if d == 1 else 2.0))
    plan = binned_host.plan_grid(queries, keys, scale, GAUSSIAN, None, 1e-3)
    assert plan.correct_queries is False
    fewer = binned_host.plan_grid(queries[:500], keys, scale, GAUSSIAN, None, 1e-3)
    assert fewer.correct_queries is None and np.prod(fewer.grid.size) < np.prod(plan.grid.size)
    some = queries[:3000]
    sums, error, _ = binned_gaussian.gaussian_sums(
        some, keys, scale, plan._replace(correct_queries=False)
    )
    exact = textbook(some, keys, scale)[:, 0]
    assert np.all(np.abs(sums[:, 0] - exact) <= error * (1 + 1e-12) + 1e-300)
    core = exact > 0.1 * exact.max()
    assert np.median(error[core] / exact[core]) < 1e-3


def test_a_lattice_guessed_from_the_first_rows_costs_no_accuracy(monkeypatch):
    # the first rows on a lattice, the rest off it: the grid is aligned to the guess, the
    # sums measure every query's place and stay within their bound
    rng = np.random.default_rng(60)
    keys = rng.normal(size=(3000, 1))
    on = np.linspace(-3, 3, 241)[:, None]
    queries = np.r_[on, rng.uniform(-3, 3, (500, 1))]
    monkeypatch.setattr(binned_gaussian, "LATTICE_ROWS", on.shape[0])
    assert binned_gaussian.lattice(queries) is not None
    scale = np.ones(1) / 0.2
    plan = binned_host.plan_grid(queries, keys, scale, GAUSSIAN, None, 1e-3)
    sums, error, _ = binned_gaussian.gaussian_sums(queries, keys, scale, plan)
    exact = textbook(queries, keys, scale)[:, 0]
    assert np.all(np.abs(sums[:, 0] - exact) <= error * (1 + 1e-12) + 1e-300)


@pytest.mark.parametrize("d", [1, 2])
@pytest.mark.parametrize("spread", [1e-4, 1.0, 1e4])  # the data's scale
@pytest.mark.parametrize("relative", [0.003, 0.3, 30.0])  # the bandwidth, in that scale
@pytest.mark.parametrize("offset", [0.0, 1.7e9])
@pytest.mark.parametrize("lattice_queries", [False, True])
def test_binned_densities_meet_the_oracle_at_any_bandwidth_and_offset(
    d, spread, relative, offset, lattice_queries
):
    # the textbook log density in float64 (centred first, as the data's own digits
    # allow): each binned density within its tolerance, up to a few roundings of its log
    from scipy.special import logsumexp

    from attnpool import log_density

    rng = np.random.default_rng(70 + d)
    x = np.r_[rng.normal(size=(1500, d)), rng.normal(3, 1e-3, (100, d)), np.full((1, d), 12.0)]
    if lattice_queries:
        axes = [np.linspace(-4, 14, 40 if d == 2 else 300)] * d
        q = np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, d)
    else:
        q = rng.uniform(-4, 14, (300, d))
    h = relative * spread
    x, q = x * spread + offset, q * spread + offset  # the oracle takes these rounded inputs
    got = log_density(x, q, bandwidth=h, method=Binned(tolerance=1e-4))
    u = (q[:, None, :] - x[None, :, :]) / h  # exact differences near the offset
    want = (logsumexp(-0.5 * np.sum(u * u, axis=2), axis=1) - np.log(len(x))
            - 0.5 * d * np.log(2 * np.pi) - d * np.log(h))  # fmt: skip
    slack = np.abs(got - want) - 16 * np.finfo(float).eps * np.abs(want)
    assert np.all(np.expm1(np.maximum(slack, 0)) <= 1e-4 + 1e-9)
