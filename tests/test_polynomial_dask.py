"""Local polynomials of Dask arrays on a real distributed.LocalCluster: equal to the NumPy
engine on uneven chunks (single-row ones included), lazily, and the refusals."""

from __future__ import annotations

import dask.array as da
import numpy as np
import pytest
from distributed import Client, LocalCluster

import attnpool

pytestmark = pytest.mark.xdist_group("dask")


@pytest.fixture(scope="module")
def client():
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=":0") as cluster, Client(cluster) as client:  # fmt: skip
        yield client


@pytest.mark.parametrize(
    "d, degree, derivative, kernel, key_chunks, query_chunks",
    [(1, 3, 1, "gaussian", 170, 40), (1, 2, 0, "epanechnikov", (300, 1, 199), 100),
     (2, 2, 2, "gaussian", 128, 33), (2, 2, 1, "tricube", (1, 499), 100),
     (3, 1, 0, "gaussian", 250, 100)],
)  # fmt: skip
def test_dask_fits_equal_the_numpy_engine(client, d, degree, derivative, kernel, key_chunks,
                                          query_chunks):  # fmt: skip
    rng = np.random.default_rng(d + degree)
    x = rng.uniform(0, 1, (500, d))
    y = np.stack([np.cos(3 * x).sum(axis=1), x[:, 0] ** 2], axis=1)
    q = rng.uniform(-0.1, 1.1, (100, d))
    q[:5] = 5.0  # no key in a compact kernel's reach: NaN
    options = dict(bandwidth=0.25, degree=degree, derivative=derivative, kernel=kernel)
    want = attnpool.local_polynomial(x, y, q, method="numpy", **options)
    got = attnpool.local_polynomial(
        da.from_array(x, chunks=(key_chunks, d)), da.from_array(y, chunks=(key_chunks, 2)),
        da.from_array(q, chunks=(query_chunks, d)), **options,
    )  # fmt: skip
    assert isinstance(got, da.Array) and got.shape == want.shape
    got = got.compute()
    assert np.array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10 * np.nanmax(np.abs(want)))


def test_one_response_and_numpy_queries(client):
    x = np.linspace(0, 1, 400)
    options = dict(bandwidth=0.1, degree=3, derivative=2)
    keys, y = da.from_array(x, chunks=90), da.from_array(np.exp(x), chunks=90)
    got = attnpool.local_polynomial(keys, y, np.array([0.5]), **options).compute()
    want = attnpool.local_polynomial(x, np.exp(x), np.array([0.5]), **options)
    np.testing.assert_allclose(got, want, rtol=1e-10)
    np.testing.assert_allclose(got, [np.exp(0.5)], rtol=1e-2)  # (exp)'' = exp, biased by h²


@pytest.mark.parametrize("scale", [1e-200, 1e200])
def test_columns_at_the_ends_of_the_float_range(client, scale):
    """A column of x ~ 1e±200: the moments' powers of x − q left the float range (NaN),
    as in memory before it took the keys' span in a power-of-two unit."""
    rng = np.random.default_rng(5)
    x = rng.uniform(0, 1, (600, 2))
    y = np.sin(3 * x[:, 0]) + x[:, 1] ** 2
    stretch, q = np.array([scale, 1.0]), np.array([[0.4, 0.5], [0.7, 0.2]])
    options = dict(degree=2, derivative=1)
    want = attnpool.local_polynomial(x, y, q, bandwidth=[0.2, 0.3], method="numpy", **options)
    got = attnpool.local_polynomial(da.from_array(x * stretch, chunks=(170, 2)),
                                    da.from_array(y, chunks=170), q * stretch,
                                    bandwidth=[0.2 * scale, 0.3], **options).compute()  # fmt: skip
    np.testing.assert_allclose(got * stretch, want, rtol=1e-12)


def test_refusals(client):
    x = da.from_array(np.linspace(0, 1, 100), chunks=30)
    with pytest.raises(ValueError, match="x_train: Dask inputs take empty='nan'"):
        attnpool.local_polynomial(x, x, [0.5], bandwidth=0.1, empty="warn")
    with pytest.raises(ValueError, match="degree: expected at most 2 in 2 columns"):
        attnpool.local_polynomial(da.stack([x, x], axis=1), x, [[0.5, 0.5]], bandwidth=0.1,
                                  degree=3)  # fmt: skip
    bad = da.from_array(np.r_[np.linspace(0, 1, 99), np.nan], chunks=30)
    with pytest.raises(ValueError, match="y_train: expected finite values"):
        attnpool.local_polynomial(x, bad, [0.5], bandwidth=0.1).compute()
