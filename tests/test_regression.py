"""Local constant and local linear regression, and the CV and AICc criteria at given
bandwidths: against statsmodels and exact references."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from statsmodels.nonparametric.kernel_regression import KernelReg

from attnpool import local_regression
from attnpool.engines.local_fits import FitRequest, hat_diagonal, local_fit, loo_residuals
from attnpool.regression import model_for
from reference import long_double_local_linear
from regression_data import continuous_data, mixed_data


@pytest.fixture(autouse=True)
def _quiet_statsmodels():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        yield


CASES = [
    ("continuous-1d", lambda s: continuous_data(s, d=1), "c", [0.4]),
    ("continuous-2d", lambda s: continuous_data(s, d=2), "cc", [0.5, 0.8]),
    ("continuous-3d", lambda s: continuous_data(s, d=3), "ccc", [0.9, 1.1, 1.3]),
    ("mixed", mixed_data, "cou", [0.5, 0.3, 0.2]),
]


@pytest.mark.parametrize(("name", "make", "var_type", "bw"), CASES)
@pytest.mark.parametrize("reg_type", ["lc", "ll"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_predictions_equal_statsmodels(name, make, var_type, bw, reg_type, seed):
    x, y = make(seed)
    queries = x[:15] + 0.01
    queries[:, [j for j, t in enumerate(var_type) if t != "c"]] = x[
        :15, [j for j, t in enumerate(var_type) if t != "c"]
    ]
    reference = KernelReg(y, x, var_type, reg_type=reg_type, bw=bw)
    mean, effects = reference.fit(queries)
    degree = 0 if reg_type == "lc" else 1
    ours, slopes = local_regression(
        x, y, queries, bandwidth=bw, degree=degree, var_type=var_type, return_slopes=True
    )
    np.testing.assert_allclose(ours, mean, rtol=1e-8)
    if reg_type == "ll":
        np.testing.assert_allclose(slopes, effects, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize(("name", "make", "var_type", "bw"), CASES)
@pytest.mark.parametrize("reg_type", ["lc", "ll"])
def test_cv_objective_equals_statsmodels(name, make, var_type, bw, reg_type):
    x, y = make(3)
    reference = KernelReg(y, x, var_type, reg_type=reg_type, bw=bw)
    expected = float(np.squeeze(reference.cv_loo(np.asarray(bw), reference.est[reg_type])))
    model = model_for(x, var_type=var_type, degree=0 if reg_type == "lc" else 1)
    with jax.enable_x64(True):
        residuals = np.asarray(
            loo_residuals(jnp.asarray(x), jnp.asarray(y)[:, None], jnp.asarray(bw, float), model)
        )
    np.testing.assert_allclose(np.mean(residuals**2), expected, rtol=1e-9)


def aicc(y, fit, trace):
    n = len(y)
    return np.log(np.mean((y - fit) ** 2)) + (1 + trace / n) / (1 - (trace + 2) / n)


@pytest.mark.parametrize(("name", "make", "var_type", "bw"), CASES)
def test_aicc_equals_statsmodels(name, make, var_type, bw):
    x, y = make(4)
    reference = KernelReg(y, x, var_type, reg_type="lc", bw=bw)
    expected = float(np.squeeze(reference.aic_hurvich(np.asarray(bw))))
    with jax.enable_x64(True):
        fit, hat = hat_diagonal(
            jnp.asarray(x),
            jnp.asarray(y)[:, None],
            jnp.asarray(bw, float),
            model_for(x, var_type=var_type),
        )
        fit, hat = np.asarray(fit), np.asarray(hat)
    np.testing.assert_allclose(aicc(y, fit[:, 0], hat.sum()), expected, rtol=1e-9)


def test_statsmodels_local_linear_aicc_uses_the_nadaraya_watson_trace():
    # statsmodels' aic_hurvich builds H from local-constant weights even for reg_type="ll";
    # attnpool uses the local-linear smoother's own trace. Both pieces are checked here.
    x, y = continuous_data(5, d=1)
    bw = [0.4]
    reference = KernelReg(y, x, "c", reg_type="ll", bw=bw)
    expected = float(np.squeeze(reference.aic_hurvich(np.asarray(bw))))
    with jax.enable_x64(True):
        args = (jnp.asarray(x), jnp.asarray(y)[:, None], jnp.asarray(bw))
        ll_fit, ll_hat = (np.asarray(a) for a in hat_diagonal(*args, model_for(x, degree=1)))
        nw_hat = np.asarray(hat_diagonal(*args, model_for(x, degree=0))[1])
    np.testing.assert_allclose(aicc(y, ll_fit[:, 0], nw_hat.sum()), expected, rtol=1e-9)
    # the local-linear hat diagonal against the explicit smoother matrix
    smoother = np.stack(
        [local_regression(x, np.eye(len(y))[j], x, bandwidth=bw, degree=1) for j in range(len(y))],
        axis=1,
    )
    np.testing.assert_allclose(ll_hat, np.diag(smoother), rtol=1e-8)


def test_analytic_cases():
    x = np.linspace(0, 3, 25)
    line = 1.5 * x - 2
    np.testing.assert_allclose(
        local_regression(x, line, x + 0.05, bandwidth=0.4, degree=1),
        1.5 * (x + 0.05) - 2,
        atol=1e-10,
    )
    _, slopes = local_regression(x, line, x, bandwidth=0.4, degree=1, return_slopes=True)
    np.testing.assert_allclose(slopes, 1.5)
    constant = np.full_like(x, 4.2)
    for degree in (0, 1):
        np.testing.assert_allclose(
            local_regression(x, constant, x, bandwidth=0.3, degree=degree), 4.2
        )


@pytest.mark.parametrize("method", ["auto", "dense"])
def test_a_singular_local_design_gets_no_slope_where_its_keys_span_nothing(method):
    # two columns, a compact kernel: the first queries reach the two keys on a line, the
    # last one key; the fit is the line through them, then that key's response
    x = np.array([[0.0, 0.0], [1.0, 0.5], [9.0, 9.0]])
    queries = np.array([[0.5, 0.25], [0.25, 0.125], [8.8, 9.1]])
    fitted = local_regression(x, np.array([1.0, 2.0, 5.0]), queries, bandwidth=[1.2, 1.2],
                              kernel="epanechnikov", degree=1, method=method)  # fmt: skip
    np.testing.assert_allclose(fitted, [1.5, 1.25, 5.0], rtol=1e-9)


def test_categorical_bandwidth_must_be_below_one():
    x, y = mixed_data(13, n=20)
    with pytest.raises(ValueError, match=r"bandwidth: column 1 is categorical \('o'\)"):
        local_regression(x, y, x, bandwidth=[0.5, 1.0, 0.2], var_type="cou")


@pytest.mark.parametrize("block_size", [None, 64])
@pytest.mark.parametrize(("kernel", "bandwidth"), [("gaussian", 0.01), ("laplacian", 1e-3)])
def test_compiled_local_linear_with_one_dominant_key_is_the_exact_weighted_fit(
    kernel, bandwidth, block_size
):
    # far from the data the second key weighs 1e-15 to 1e-50 of the first: moments about
    # the query cancelled to rounding (the fits were up to 117% off); about the heaviest
    # key they are exact, in the dense and the streamed engines, fits and leave-one-out
    rng = np.random.default_rng(0)
    x = np.round(rng.uniform(0, 5, 200) * 1024) / 1024
    y = np.sin(x) + 0.2 * rng.standard_normal(200)
    queries = rng.uniform(-1, 6, 30)
    model = model_for(x[:, None], kernel=kernel, degree=1)
    h = np.array([bandwidth])
    few = np.arange(0, 200, 10)  # separated keys: each left-out fit is dominated
    with jax.enable_x64(True):
        got = local_fit(
            x[:, None], y[:, None], queries[:, None], h, FitRequest(model, block_size=block_size)
        )
        residuals = loo_residuals(x[few, None], y[few, None], h * 10, model, block_size=block_size)
    want = long_double_local_linear(x, y, queries, kernel, bandwidth)
    np.testing.assert_allclose(np.asarray(got[0])[:, 0], want, rtol=1e-9, atol=1e-9)
    for i, row in enumerate(few):
        others = np.delete(few, i)
        fit = long_double_local_linear(x[others], y[others], x[row : row + 1], kernel, 10 * h)
        np.testing.assert_allclose(y[row] - np.asarray(residuals)[i, 0], fit, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("block_size", [None, 64])
def test_compiled_local_linear_in_two_columns_with_one_dominant_key(block_size):
    # the heaviest key found by the exp-free pass over the keys (two columns); keys on a
    # grid, so the keys after the heaviest span both directions and the fit is well posed
    rng = np.random.default_rng(1)
    x = np.stack(np.meshgrid(np.arange(21) / 4, np.arange(21) / 4), axis=-1).reshape(-1, 2)
    y = np.sin(x[:, 0]) + x[:, 1] + 0.2 * rng.standard_normal(len(x))
    queries = np.concatenate([rng.uniform(-0.5, 0, (10, 2)), rng.uniform(5, 5.5, (10, 2))])
    model = model_for(x, degree=1)
    h = np.array([0.08, 0.1])
    with jax.enable_x64(True):
        got = local_fit(x, y[:, None], queries, h, FitRequest(model, block_size=block_size))[0]
    want = long_double_local_linear(x, y, queries, "gaussian", h)
    np.testing.assert_allclose(np.asarray(got)[:, 0], want, rtol=1e-9, atol=1e-9)


def test_boolean_responses_are_zeros_and_ones():
    # a binary outcome's kernel regression is its probability: the functions take
    # booleans as the estimators (scikit-learn's conversion), LOWESS and the binned fit do
    import attnpool

    x = np.linspace(0, 5, 60)
    y = np.sin(3 * x) > 0
    q = np.array([[0.4], [2.2]])
    numbers = attnpool.nadaraya_watson(x, y.astype(float), q, bandwidth=0.3)
    np.testing.assert_array_equal(attnpool.nadaraya_watson(x, y, q, bandwidth=0.3), numbers)
    np.testing.assert_array_equal(attnpool.nadaraya_watson(x, list(y), q, bandwidth=0.3), numbers)
    estimator = attnpool.NadarayaWatson(bandwidth=0.3).fit(x[:, None], y)
    np.testing.assert_array_equal(estimator.predict(q), numbers)
    np.testing.assert_array_equal(attnpool.attention_pool(q, x, y, bandwidth=0.3), numbers)
    np.testing.assert_array_equal(
        local_regression(x, y, q, bandwidth=0.3, degree=1),
        local_regression(x, y.astype(float), q, bandwidth=0.3, degree=1),
    )
    on_device = attnpool.nadaraya_watson(
        jnp.asarray(x), jnp.asarray(y), jnp.asarray(q), bandwidth=0.3
    )
    np.testing.assert_allclose(on_device, numbers, rtol=1e-5)
    # booleans as coordinates stay refused (no distance between True and False is meant)
    with pytest.raises(TypeError, match=r"keys: expected a numeric .* received dtype bool"):
        attnpool.attention_pool([1.0], [True, False], [1.0, 2.0])


@pytest.mark.parametrize("method", ["auto", "stream"])
@pytest.mark.parametrize("degree", [0, 1])
def test_the_empty_policy_is_attention_pools(method, degree):
    # local_regression returned NaN silently under its default empty="nan", and a
    # Gaussian whose distances passed the float range was NaN where nadaraya_watson
    # gives the nearest key's value, the formula's limit
    from attnpool import EmptyNeighbourhoodWarning, nadaraya_watson

    x, y = np.array([0.0, 1.0, 2.0]), np.array([1.0, 2.0, 4.0])
    queries = np.array([0.1, 9.0])
    options = {"kernel": "boxcar", "bandwidth": 0.5, "degree": degree, "method": method}
    with pytest.warns(EmptyNeighbourhoodWarning, match="1 of 2 queries .* result is NaN"):
        np.testing.assert_array_equal(local_regression(x, y, queries, **options), [1.0, np.nan])
    with pytest.warns(EmptyNeighbourhoodWarning, match="1 of 2 queries .* nearest training"):
        got = local_regression(x, y, queries, empty="warn", **options)
    np.testing.assert_array_equal(got, [1.0, 4.0])
    with pytest.raises(ValueError, match=r"^empty: 1 of 2 queries have no training point"):
        local_regression(x, y, queries, empty="raise", **options)
    tiny = {"bandwidth": 1e-300, "degree": degree, "method": method}
    for empty in ("nan", "warn", "raise"):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got = local_regression(x, y, [0.4, 1.7, 1e200], empty=empty, **tiny)
        np.testing.assert_array_equal(got, [1.0, 4.0, 7.0 / 3.0])
    np.testing.assert_array_equal(nadaraya_watson(x, y, [0.4, 1.7, 1e200], bandwidth=1e-300),
                                  [1.0, 4.0, 7.0 / 3.0])  # fmt: skip


@pytest.mark.parametrize("d", [1, 2])
@pytest.mark.parametrize("method", ["auto", "stream", "pallas"])  # (auto: the NumPy engine)
def test_local_linear_moments_are_taken_about_the_key_weights_make_heaviest(d, method):
    # the compiled fits take each row's moments about its heaviest key; found by distance
    # alone, the nearest key stood in where observation weights make another carry
    # nearly all the weight, and the covariance about it cancelled to rounding
    # (3e-7 off in the fit; 1e-12 now)
    rng = np.random.default_rng(3)
    x = rng.uniform(0, 3, (30, d))
    y = np.sin(x.sum(axis=1)) + rng.normal(0, 0.1, 30)
    queries = x[:4] + 0.01
    w = np.full(30, 1e-10)
    w[10] = 1.0
    want = []
    for q in queries:  # two passes: the weighted means, then the covariances about them
        a = w * np.exp(-0.5 * ((x - q) ** 2).sum(axis=1))
        a = a / a.sum()
        x_bar, y_bar = a @ x, a @ y
        c = x - x_bar
        slope = np.linalg.solve(c.T @ (a[:, None] * c), c.T @ (a * (y - y_bar)))
        want.append(y_bar + slope @ (q - x_bar))
    got = local_regression(x, y, queries, bandwidth=1.0, degree=1, weights=w, method=method)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-11)
