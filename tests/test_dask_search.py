"""The leave-one-out CV search on Dask (:mod:`attnpool.distributed.selection`), on a real
distributed.LocalCluster (two worker processes), against the search in memory."""

import warnings

import dask
import dask.array as da
import numpy as np
import pytest
from distributed import Client, LocalCluster

import attnpool
from attnpool import NadarayaWatson, datasets
from attnpool.distributed import selection as dask_selection
from attnpool.sums.observation_weights import merged_rows

# (the Dask modules share one pytest worker: one cluster at a time)
pytestmark = pytest.mark.xdist_group("dask")


@pytest.fixture(scope="module")
def client():
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                           memory_limit="2GB", dashboard_address=":0")  # fmt: skip
    with cluster, Client(cluster) as client:
        yield client


def test_cross_validation_over_a_sharded_training_set(client):
    data = datasets.sine_data(n=400, seed=5)
    x = da.from_array(data.x_train, chunks=100)
    candidates = np.array([[0.05], [0.15], [0.4]])
    np.testing.assert_allclose(
        dask_selection.cv_objectives(x, data.y_train, candidates),
        attnpool.cv_curve(data.x_train, data.y_train, candidates[:, 0]),
        rtol=1e-12,
    )
    model = NadarayaWatson().fit(x, da.from_array(data.y_train, chunks=100))
    local = NadarayaWatson().fit(data.x_train[:, None], data.y_train)
    assert model.bandwidth_ == pytest.approx(local.bandwidth_, rel=0.03)
    assert model.cv_score_ <= local.cv_score_ * (1 + 1e-5)  # a grid in two passes vs L-BFGS
    queries = da.from_array(data.x_val[:, None], chunks=30)
    prediction = model.predict(queries)
    assert isinstance(prediction, da.Array)
    fixed = NadarayaWatson(bandwidth=model.bandwidth_).fit(data.x_train[:, None], data.y_train)
    np.testing.assert_allclose(prediction.compute(), fixed.predict(data.x_val[:, None]), rtol=1e-12)


def test_cross_validation_of_a_cluster_and_a_far_outlier(client):
    """60 points on [0, 1] and one at 10⁹: a chunk of the outlier alone crashed at small
    bandwidths (its far rows' reach rounded below their nearest key: no key summed), and
    the grid followed the outlier's standard deviation to 3·10⁸ (CV 0.55, where 0.025
    gives 0.007)."""
    rng = np.random.default_rng(3)
    cluster = np.sort(rng.uniform(0, 1, 60))
    x, y = np.r_[cluster, 1e9], np.r_[np.sin(12 * cluster), np.sin(12 * cluster[-1])]
    sharded = da.from_array(x[:, None], chunks=20)
    candidates = np.array([[0.001], [0.03], [1.0]])
    np.testing.assert_allclose(
        dask_selection.cv_objectives(sharded, da.from_array(y, chunks=20), candidates),
        attnpool.cv_curve(x, y, candidates[:, 0]),
        rtol=1e-12,
    )
    found = dask_selection.select_bandwidth(sharded, da.from_array(y, chunks=20))
    local = attnpool.select_bandwidth(x, y)
    assert found.bandwidth[0] == pytest.approx(local.bandwidth[0], rel=0.05)
    assert found.objective <= local.objective * (1 + 0.01)  # a grid in two passes


def test_the_search_descends_in_several_columns_as_in_memory(client):
    """y depends on the first two of three columns: the grid's common multiples of
    Scott's rule (all that Dask's search tried) stopped at CV 0.0505 in 3000 rows, where
    the in-memory search finds 0.0422; the rounds of moves find the in-memory CV."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(600, 3))
    y = x[:, 0] ** 2 + np.sin(2 * x[:, 1]) + 0.3 * rng.normal(size=600)
    found = dask_selection.select_bandwidth(da.from_array(x, chunks=(150, 3)),
                                            da.from_array(y, chunks=150))  # fmt: skip
    local = attnpool.select_bandwidth(x, y)
    assert found.objective == pytest.approx(attnpool.cv_curve(x, y, found.bandwidth[None])[0],
                                            rel=1e-12)  # fmt: skip
    assert found.objective <= local.objective * (1 + 1e-3)
    line = np.geomspace(0.05, 5.0, 64)[:, None] * attnpool.rule_of_thumb(x)
    assert found.objective < 0.97 * attnpool.cv_curve(x, y, line).min()


@pytest.mark.parametrize("d", [1, 2])
def test_repeated_rows_leave_out_together_as_in_memory(client, d):
    """Rows repeated 1–3 times, in shuffled chunks (some x repeated with another y, not
    merged): each row left out its own row only, so its twin predicted it exactly and the
    search followed CV to h → 0 (two columns: (0.022, 0.0004), CV 0)."""
    rng = np.random.default_rng(3)
    base = rng.uniform(0, 5, (150, d))
    responses = np.sin(base[:, 0]) + 0.3 * rng.normal(size=150)
    repeats = rng.integers(1, 4, 150)
    x = np.r_[np.repeat(base, repeats, axis=0), base[:5]]
    y = np.r_[np.repeat(responses, repeats), responses[:5] + 1.0]
    order = rng.permutation(y.size)
    sharded = da.from_array(x[order], chunks=(70, d))
    lazy_y = da.from_array(y[order], chunks=70)
    merged_x, merged_y, counts = merged_rows(x, y[:, None], None)
    candidates = np.array([[0.05] * d, [0.2] * d, [0.5] * d])
    np.testing.assert_allclose(
        dask_selection.cv_objectives(sharded, lazy_y, candidates),
        attnpool.cv_curve(merged_x, merged_y[:, 0], candidates, weights=counts),
        rtol=1e-12,
    )
    found = dask_selection.select_bandwidth(sharded, lazy_y)
    assert found.objective <= attnpool.select_bandwidth(x, y).objective * (1 + 1e-4)


def test_one_column_y_does_not_depend_on_is_smoothed_out(client):
    # the grid ends at 5× Scott's rule (CV 0.08% above the constant fit's)
    rng = np.random.default_rng(0)
    x, y = rng.uniform(0, 1, (500, 1)), rng.normal(size=500)
    found = dask_selection.select_bandwidth(da.from_array(x, chunks=(125, 1)),
                                            da.from_array(y, chunks=125))  # fmt: skip
    assert found.bandwidth[0] > 1e4 * np.ptp(x)
    assert found.objective <= attnpool.select_bandwidth(x, y).objective * (1 + 1e-9)


def test_a_pass_with_a_new_number_of_candidates_builds_no_program():
    # the merges and t / s were eager JAX, a program per shape: up to 9 s a pass
    x = np.random.default_rng(0).uniform(0, 1, (40, 2))
    sharded, y = da.from_array(x, chunks=(7, 2)), da.from_array(np.sin(6 * x[:, 0]), chunks=7)
    with dask.config.set(scheduler="sync"):
        dask_selection.cv_objectives(sharded, y, np.full((5, 2), 0.1))
        for count in (9, 13, 30):
            with attnpool.count_programs() as programs:
                found = dask_selection.cv_objectives(sharded, y, np.full((count, 2), 0.1))
            assert programs.traced == 0 and found.shape == (count,)


@pytest.mark.parametrize(
    ("name", "to_x", "to_y", "h_factor", "y_factor"),
    [
        ("x shifted by 2^30", lambda x: x + 2.0**30, lambda y: y, 1.0, 1.0),
        ("x times 2^200", lambda x: x * 2.0**200, lambda y: y, 2.0**200, 1.0),
        ("y times 2^-300", lambda x: x, lambda y: y * 2.0**-300, 1.0, 2.0**-300),
    ],
)
def test_dask_selection_is_shift_and_scale_equivariant(
    client, name, to_x, to_y, h_factor, y_factor
):
    rng = np.random.default_rng(6)
    x = np.round(rng.uniform(0, 5, (600, 1)) * 1024) / 1024
    y = np.sin(x[:, 0]) + 0.2 * rng.standard_normal(600)
    base = NadarayaWatson().fit(da.from_array(x, 150), da.from_array(y, 150))
    moved = NadarayaWatson().fit(da.from_array(to_x(x), 150), da.from_array(to_y(y), 150))
    np.testing.assert_allclose(moved.bandwidth_, base.bandwidth_ * h_factor, rtol=1e-9)
    np.testing.assert_allclose(moved.cv_score_, base.cv_score_ * y_factor**2, rtol=1e-9)


def test_classes_apart_on_dask_get_the_bandwidth_in_memory_gets(client):
    # CV is at rounding for every h up to ~1.3: both take the largest such, with a warning
    rng = np.random.default_rng(7)
    x = np.r_[rng.normal(0, 1, 60), rng.normal(10, 1, 60)][:, None]
    labels = np.repeat([0.0, 1.0], 60)
    warning = attnpool.bandwidth.FlatCriterionWarning
    with pytest.warns(warning, match="at every bandwidth up to"):
        found = dask_selection.select_bandwidth(da.from_array(x, 32), da.from_array(labels, 32))
    with pytest.warns(warning, match="at every bandwidth up to"):
        local = attnpool.select_bandwidth(x, labels)
    np.testing.assert_allclose(found.bandwidth, local.bandwidth, rtol=0.03)
    assert found.objective <= 1e-12 * np.var(labels)
    # samples whose CV is lowest in its h → 0 limit: the largest bandwidth still there,
    # the grid extended below while CV falls, as in memory (177: it stopped at the grid's
    # bottom, 3.6 times higher, CV 0.9% above)
    for seed in (23, 177):
        rng = np.random.default_rng(seed)
        n = rng.integers(5, 30)
        few = rng.uniform(0.0, 1.0, n)
        y = np.sin(3.0 * few) + rng.normal(size=n) * rng.choice([0.05, 0.3, 1.0])
        with pytest.warns(warning, match="lowest in its h → 0 limit"):
            found = dask_selection.select_bandwidth(
                da.from_array(few[:, None], 4), da.from_array(y, 4)
            )
        with pytest.warns(warning, match="lowest in its h → 0 limit"):
            local = attnpool.select_bandwidth(few, y)
        np.testing.assert_allclose(found.bandwidth, local.bandwidth, rtol=0.02)
        np.testing.assert_allclose(found.objective, local.objective, rtol=1e-9)  # (FLAT)
    with warnings.catch_warnings():
        warnings.simplefilter("error", warning)
        y = np.sin(x[:, 0]) + 0.3 * rng.standard_normal(120)
        dask_selection.select_bandwidth(da.from_array(x, 32), da.from_array(y, 32))


def test_a_column_classes_apart_do_not_need_is_smoothed_out_on_dask(client):
    from attnpool.bandwidth.search import SMOOTHED_OUT

    rng = np.random.default_rng(7)
    x = np.c_[np.r_[rng.normal(0, 1, 60), rng.normal(10, 1, 60)], rng.normal(size=120)]
    labels = np.repeat([0.0, 1.0], 60)
    warning = attnpool.bandwidth.FlatCriterionWarning
    with pytest.warns(warning, match="at every bandwidth up to"):
        found = dask_selection.select_bandwidth(da.from_array(x, (32, 2)),
                                                da.from_array(labels, 32))  # fmt: skip
    with pytest.warns(warning, match="at every bandwidth up to"):
        local = attnpool.select_bandwidth(x, labels)
    half = (x[:, 1].max() - x[:, 1].min()) / 2
    np.testing.assert_allclose(found.bandwidth[1], SMOOTHED_OUT * half, rtol=1e-9)
    np.testing.assert_allclose(found.bandwidth, local.bandwidth, rtol=0.03)
