"""The keys that can matter to a row a binning leaves unsettled, and its exact sum over
them: the nearest occupied node against brute force, the keys found hold every row's
sum, and the compiled sums held to logsumexp in float64 on hostile rows and layouts."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import logsumexp

from attnpool import Binned, kernel_density, kernels
from attnpool.methods import binned_host, binned_near, native
from attnpool.methods.binned_host import plan_grid
from attnpool.methods.binning import GridPlan

GAUSSIAN = kernels.get("gaussian")


@pytest.mark.parametrize("shape", [(40,), (23, 31), (64, 5)])
def test_the_nearest_occupied_node_is_nearest_in_node_steps(shape):
    rng = np.random.default_rng(len(shape) * shape[0])
    occupied = rng.random(shape) < 0.03
    occupied.reshape(-1)[rng.integers(occupied.size)] = True
    found = binned_near.nearest_occupied(occupied).reshape(-1)
    assert np.all(occupied.reshape(-1)[found])
    nodes, marked = np.argwhere(np.ones(shape, bool)), np.argwhere(occupied)
    steps = np.abs(nodes[:, None, :] - marked[None]).sum(axis=2).min(axis=1)
    np.testing.assert_array_equal(np.abs(nodes - np.argwhere(np.ones(shape, bool))[found]).sum(1),
                                  steps)  # fmt: skip
    assert np.all(binned_near.nearest_occupied(np.zeros(shape, bool)) == -1)


@pytest.mark.parametrize("kernel", ["gaussian", "laplacian", "epanechnikov"])
@pytest.mark.parametrize("d", [1, 2])
@pytest.mark.parametrize("blocks", [2**16, 64])
def test_the_keys_near_a_row_hold_all_of_its_sum(kernel, d, blocks, monkeypatch):
    monkeypatch.setattr(binned_near, "NEAR_BLOCKS", blocks)  # blocks of nodes searched
    # rows in the tails, between clusters and far from every key: the sum over the keys
    # keys_near selects equals the sum over all of them to rounding
    rng = np.random.default_rng(10 + d)
    keys = np.concatenate([rng.normal(0, 1, (3000, d)), rng.normal(6, 0.2, (300, d))])
    rows = np.concatenate([rng.uniform(-7, -4, (30, d)), rng.uniform(8, 10, (30, d)),
                           np.full((1, d), 3.0)])  # fmt: skip
    record = kernels.for_dimensions(kernels.get(kernel), d)
    scale = np.full(d, 1 / (0.05 if kernel == "laplacian" else 0.3))  # its reach is long
    grid, reach = plan_grid(rows, keys, scale, record)[:2]
    plan = GridPlan(grid, reach)
    _, _, binning = binned_host.binned_sums(rows, keys, scale, record, plan, cells=True)
    near = binned_near.keys_near(rows * scale, record, binning, keys.shape[0])
    if d == 1:  # without each key's cell: by the rows' merged intervals
        bare = binning._replace(cells=None)
        by_intervals = binned_near.keys_near(rows * scale, record, bare, keys.shape[0],
                                             keys=keys, scale=scale)  # fmt: skip
        assert by_intervals.size < keys.shape[0]
        check = [near, by_intervals]
    else:
        check = [near]
    assert near.size < keys.shape[0] or blocks < 2**16  # coarse blocks: a loose superset
    log_k = np.asarray(record.log_profile(np.sum(((rows[:, None] - keys[None]) * scale) ** 2, -1)))
    everything = logsumexp(log_k, axis=1)
    reached = np.isfinite(everything)
    for chosen in check:
        selected = logsumexp(log_k[:, chosen], axis=1)
        np.testing.assert_array_equal(np.isfinite(selected), reached)
        np.testing.assert_allclose(selected[reached], everything[reached], rtol=0, atol=1e-13)


def _binned(keys, rows, h, order=None):
    """The binning of ``keys`` a binned density of ``rows`` takes (each key's node kept)."""
    scale = np.full(2, 1 / h)
    plan = plan_grid(rows, keys, scale, GAUSSIAN, None, 1e-3)
    plan = plan._replace(order=plan.order if order else None, correct_queries=None)
    _, _, binning = binned_host.binned_sums(rows, keys, scale, GAUSSIAN, plan, cells=True)
    return scale, binning


def _layout(seed: int) -> np.ndarray:
    # a broad core, a tight cluster, ties and a far outlier
    rng = np.random.default_rng(seed)
    return np.concatenate([rng.normal(0, 1, (4000, 2)), rng.normal([3, -2], 0.01, (300, 2)),
                           np.full((50, 2), 1.25), [[30.0, -30.0]]])  # fmt: skip


@pytest.mark.parametrize("order", [False, True])  # each key's nearest node, or its cell's corner
@pytest.mark.parametrize("cell_rows", [1e9, 1.0])  # cells of one node, or of many
@pytest.mark.parametrize("blocks", [2**16, 64])
def test_the_near_sums_are_every_keys_sum(order, cell_rows, blocks, monkeypatch):
    monkeypatch.setattr(binned_near, "SUM_CELL_ROWS", cell_rows)
    monkeypatch.setattr(binned_near, "NEAR_BLOCKS", blocks)
    keys = _layout(1)
    rng = np.random.default_rng(2)
    rows = np.concatenate([
        rng.uniform(-6, 6, (200, 2)),  # the core, its tails and the gaps
        keys[rng.integers(0, keys.shape[0], 20)],  # on keys: a tie at distance 0
        [[3.0, -2.0], [29.9, -30.0], [-40.0, 45.0]],  # in the cluster, by and past the outlier
    ])  # fmt: skip
    h = 0.05
    scale, binning = _binned(keys, rows, h, order)
    squared = np.sum(((rows[:, None] - keys[None]) / h) ** 2, axis=-1)
    expected = logsumexp(-squared / 2, axis=1)
    # without a lower bound on the sums, and with one (half of each; 0 where it underflows)
    for least in (None, np.exp(expected) / 2):
        got = binned_near.near_log_sums(rows * scale, GAUSSIAN, binning, keys.shape[0], least,
                                        keys, scale)  # fmt: skip
        assert np.all(np.isfinite(got))
        # rounding of the squared distances only: far rows' sums are e^(−10⁶)
        np.testing.assert_allclose(got, expected, rtol=1e-13, atol=1e-11)


def test_the_near_sums_are_for_the_gaussian_in_two_columns_with_a_compiler(monkeypatch):
    keys = _layout(3)
    rows = np.array([[-5.0, 5.0], [8.0, 8.0]])
    scale, binning = _binned(keys, rows, 0.1)
    args = (rows * scale, GAUSSIAN, binning, keys.shape[0], None, keys, scale)
    assert binned_near.near_log_sums(*args) is not None
    laplacian = kernels.for_dimensions(kernels.get("laplacian"), 2)
    assert binned_near.near_log_sums(rows * scale, laplacian, *args[2:]) is None
    assert binned_near.near_log_sums(*args[:2], binning._replace(cells=None), *args[3:]) is None
    monkeypatch.setattr(native, "expansion_function", lambda name: None)
    assert binned_near.near_log_sums(*args) is None


@pytest.mark.parametrize("offset", [0.0, 1.7e9])
def test_binned_densities_in_two_columns_sum_their_tails_exactly(offset, monkeypatch):
    # KDEpy's game in two columns: a lattice past the data, most of it in the tails, on
    # Unix-time coordinates; the rows the bound leaves are summed by the compiled pass,
    # or without it by the exact method over the keys near them: both within tolerance
    rng = np.random.default_rng(4)
    x = rng.normal(size=(50_000, 2)) + offset
    axis = np.linspace(-5, 5, 96)
    grid = np.stack(np.meshgrid(axis, axis, indexing="ij"), axis=-1).reshape(-1, 2) + offset
    exact = kernel_density(x, grid, bandwidth=0.1, method="native")
    assert np.min(exact) < 1e-100  # the corners: far from every key
    compiled = kernel_density(x, grid, bandwidth=0.1, method=Binned(tolerance=1e-3))
    monkeypatch.setattr(binned_near, "near_log_sums", lambda *args: None)
    by_keys = kernel_density(x, grid, bandwidth=0.1, method=Binned(tolerance=1e-3))
    for got in (compiled, by_keys):
        np.testing.assert_array_less(np.abs(got - exact), 1e-3 * exact)


@pytest.mark.parametrize("blocks", [2**16, 64])
def test_the_compiled_reach_and_cover_are_numpys(blocks, monkeypatch):
    # the compiled pass's reach and covered blocks against row_reach and the boxes in NumPy
    monkeypatch.setattr(binned_near, "NEAR_BLOCKS", blocks)
    keys = _layout(5)
    rng = np.random.default_rng(6)
    rows = np.concatenate([rng.uniform(-8, 8, (300, 2)), [[500.0, -500.0]]])
    scale, binning = _binned(keys, rows, 0.05, True)
    scaled = rows * scale
    least = np.where(rng.random(rows.shape[0]) < 0.5, rng.uniform(1e-30, 1, rows.shape[0]), 0.0)
    for bounds in (None, least):
        reach, shape, factor = binned_near.row_reach(scaled, GAUSSIAN, binning, keys.shape[0],
                                                     bounds)  # fmt: skip
        low, high = binned_near._node_boxes(scaled, reach, binning.grid)
        size = np.asarray(shape.shape)
        low, high = np.clip(low // factor, 0, size), np.clip(-(-high // factor), 0, size)
        expected = binned_near._covered(low, high, size)
        factor_c, occupied, source, within = binned_near._occupied(binning)
        got, covered = np.empty(rows.shape[0]), np.zeros(occupied.shape, np.uint8)
        arrays = [np.ascontiguousarray(a, dtype) for a, dtype in (
            (scaled, np.float64), (source, np.int64), (occupied.shape, np.int64),
            (binning.grid.start, np.float64), (binning.grid.spacing, np.float64),
            (binning.grid.size, np.int64))]  # fmt: skip
        held = None if bounds is None else np.ascontiguousarray(bounds)
        at = native.address
        status = native.expansion_function("gaussian_reach")(
            at(arrays[0]), rows.shape[0], at(arrays[1]), at(arrays[2]), factor_c,
            *(at(a) for a in arrays[3:]), None if held is None else at(held),
            2 * np.log(keys.shape[0] / binned_near.fgt.TOLERANCE), within, at(got), at(covered),
        )  # fmt: skip
        assert status == 0 and factor_c == factor
        np.testing.assert_allclose(got, reach, rtol=1e-12)
        np.testing.assert_array_equal(covered.astype(bool), expected)
