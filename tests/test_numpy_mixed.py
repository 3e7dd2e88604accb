"""The NumPy engine on mixed data: ordered and unordered categorical columns beside
continuous ones (Wang–van Ryzin's and Aitchison–Aitken's kernels, as statsmodels and R's
np weigh them), held to the compiled engines — predictions, slopes, the leave-one-out
objective and the searched bandwidths — and run without JAX."""

import os
import subprocess
import sys

import numpy as np
import pytest

from attnpool import local_regression, select_bandwidth
from attnpool.engines import numpy_engine
from attnpool.sums.local_model import model_for


def _mixed(n, var_type, seed=0):
    rng = np.random.default_rng(seed)
    columns, y = [], np.zeros(n)
    for j, kind in enumerate(var_type):
        if kind == "c":
            column = rng.uniform(0, 5, n)
            y += np.sin(column + j)
        else:
            column = rng.integers(0, 3 if kind == "u" else 4, n).astype(float)
            y += (column == 1) * 1.5 if kind == "u" else 0.5 * column
        columns.append(column)
    y = np.column_stack([y, np.cos(y)]) + 0.2 * rng.standard_normal((n, 2))
    return np.column_stack(columns), y


@pytest.mark.parametrize("var_type", ["cu", "co", "uc", "cuo", "uo"])
@pytest.mark.parametrize("kernel", ["gaussian", "epanechnikov"])
@pytest.mark.parametrize("degree", [0, 1])
def test_mixed_fits_equal_the_compiled_engines(var_type, kernel, degree):
    x, y = _mixed(300, var_type)
    queries, _ = _mixed(25, var_type, seed=1)
    bandwidth = np.array([1.2 if t == "c" else 0.3 for t in var_type])
    model = model_for(x, kernel=kernel, var_type=var_type, degree=degree)
    assert numpy_engine.serves(model, 25, 300, 2)
    got, slopes, empty = numpy_engine.local_fit(x, y, queries, bandwidth, model)
    want, want_slopes = local_regression(  # a block size: the compiled (streamed) engine
        x, y, queries, kernel=kernel, bandwidth=bandwidth, degree=degree, var_type=var_type,
        return_slopes=True, block_size=64,
    )  # fmt: skip
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(slopes, want_slopes, rtol=1e-8, atol=1e-10)
    np.testing.assert_array_equal(empty, np.isnan(want).any(axis=1))


def _loo(x, y, bandwidth, model):
    """The leave-one-out mean squared error at ``bandwidth``, from the fits themselves."""
    fit = numpy_engine.local_fit(x, y, x, bandwidth, model, exclude_self=True)[0]
    return float(np.mean((y.reshape(fit.shape) - fit) ** 2))


@pytest.mark.parametrize("var_type", ["cu", "co"])
@pytest.mark.parametrize("degree", [0, 1])
def test_the_mixed_search_equals_the_compiled_one(var_type, degree):
    x, y = _mixed(120, var_type, seed=2)
    model = model_for(x, var_type=var_type, degree=degree)
    fast = select_bandwidth(x, y, var_type=var_type, degree=degree)
    compiled = select_bandwidth(x, y, var_type=var_type, degree=degree, pooling="dense")
    # the same optimum: λ → 0 (each level its own fit) where the criterion is flat there
    np.testing.assert_allclose(fast.bandwidth[0], compiled.bandwidth[0], rtol=1e-3)
    at_zero = max(fast.bandwidth[1], compiled.bandwidth[1]) < 1e-3
    assert at_zero or fast.bandwidth[1] == pytest.approx(compiled.bandwidth[1], rel=1e-3)
    assert fast.objective <= compiled.objective * (1 + 1e-9)
    # the host objective is the compiled criterion
    assert _loo(x, y, compiled.bandwidth, model) == pytest.approx(compiled.objective, rel=1e-10)
    assert _loo(x, y, fast.bandwidth, model) == pytest.approx(fast.objective, rel=1e-10)


def test_a_lambda_of_zero_splits_the_data_by_level():
    # λ = 0: each level its own regression, with no warning (log 0 off the diagonal)
    x, y = _mixed(200, "cu", seed=3)
    model = model_for(x, var_type="cu")
    with np.errstate(all="raise"):
        got, _, _ = numpy_engine.local_fit(x, y, x[:30], np.array([0.8, 0.0]), model)
    for level in range(3):
        rows = x[:30, 1] == level
        keep = x[:, 1] == level
        alone = numpy_engine.local_fit(
            x[keep, :1], y[keep], x[:30][rows, :1], np.array([0.8]), model_for(x[:, :1])
        )[0]
        np.testing.assert_allclose(got[rows], alone, rtol=1e-12)


MIXED_FIT = (
    "import sys, numpy as np, attnpool\n"
    "rng = np.random.default_rng(4)\n"
    "X = np.c_[rng.uniform(0, 1, 32), rng.integers(0, 3, 32)]\n"
    "y = np.sin(6 * X[:, 0]) + X[:, 1] + rng.normal(0, 0.1, 32)\n"
    "model = attnpool.NadarayaWatson(var_type='cu').fit(X, y)\n"
    "np.save(sys.argv[1], np.r_[model.bandwidth_, model.predict(X[:5])])\n"
    "print('jax' in sys.modules)\n"
)


def test_a_small_mixed_fit_imports_no_jax(tmp_path):
    """A 32-row ``var_type="cu"`` fit and its predictions: NumPy only (JAX's import alone
    cost ~1.8 s of such a fit), the numbers of the compiled engines."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("JAX_COMPILATION")}
    run = subprocess.run(
        [sys.executable, "-c", MIXED_FIT, str(tmp_path / "fit.npy")],
        capture_output=True, text=True, timeout=300, env=environ,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["False"]
    found = np.load(tmp_path / "fit.npy")
    rng = np.random.default_rng(4)
    X = np.c_[rng.uniform(0, 1, 32), rng.integers(0, 3, 32)]
    y = np.sin(6 * X[:, 0]) + X[:, 1] + rng.normal(0, 0.1, 32)
    # λ → 0 (the level decides): the host search's optimum, no worse than the compiled one's
    model = model_for(X, var_type="cu")
    compiled = select_bandwidth(X, y, var_type="cu", pooling="dense")
    assert found[1] < 1e-8 and compiled.bandwidth[1] < 1e-8
    assert _loo(X, y[:, None], found[:2], model) <= compiled.objective * (1 + 1e-12)
    np.testing.assert_allclose(
        found[2:], local_regression(X, y, X[:5], bandwidth=found[:2], var_type="cu",
                                    block_size=64), rtol=1e-10)  # fmt: skip


@pytest.mark.parametrize("degree", [0, 1])
def test_the_nearest_key_limit_of_mixed_rows_is_the_compiled_engines(degree):
    # queries beyond every key's support: the nearest keys' mean, the continuous columns
    # in units of the smallest bandwidth and the codes as they are, as compiled
    x, y = _mixed(200, "cu", seed=5)
    queries = np.array([[9.0, 1.0], [-4.0, 2.0], [2.5, 0.0]])
    h = np.array([0.3, 0.2])
    model = model_for(x, kernel="epanechnikov", var_type="cu", degree=degree)
    got = numpy_engine.local_fit(x, y, queries, h, model, nearest=True)[0]
    want = local_regression(x, y, queries, kernel="epanechnikov", bandwidth=h, var_type="cu",
                            degree=degree, empty="nearest", block_size=64)  # fmt: skip
    np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("degree", [0, 1])
def test_the_nearest_keys_of_three_columns_are_told_apart_beside_a_categorical_one(degree):
    # continuous coordinates of 1e-28 beside codes of 1: the compiled limit's matrix
    # product left every key of a level tied (their mean), the differences do not
    x, y = _mixed(150, "cuc", seed=2)
    x[:, [0, 2]] *= 1e-28
    queries = x[:6] + np.array([5e-28, 0.0, 5e-28])
    h = np.array([1e-30, 0.4, 2e-30])
    model = model_for(x, kernel="epanechnikov", var_type="cuc", degree=degree)
    got = numpy_engine.local_fit(x, y, queries, h, model, nearest=True)[0]
    want = local_regression(x, y, queries, kernel="epanechnikov", bandwidth=h, var_type="cuc",
                            degree=degree, empty="nearest", block_size=64)  # fmt: skip
    closest = [np.argmin(np.where(x[:, 1] == q[1], np.sum(((x - q) / h)[:, [0, 2]] ** 2, axis=1),
                                  np.inf)) for q in queries]  # fmt: skip
    np.testing.assert_allclose(got, y[closest], rtol=1e-12)
    np.testing.assert_allclose(want, y[closest], rtol=1e-12)
