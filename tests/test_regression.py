"""Local constant and local linear regression, bandwidth selection: against statsmodels."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from statsmodels.nonparametric.kernel_regression import KernelReg

from attnpool import cv_curve, local_regression, rule_of_thumb, select_bandwidth
from attnpool.local_engine import hat_diagonal, local_fit, loo_residuals
from attnpool.regression import model_for
from reference import long_double_local_linear


@pytest.fixture(autouse=True)
def _quiet_statsmodels():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        yield


def continuous_data(seed, n=50, d=2):
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 5, (n, d))
    y = 2 * np.sin(x[:, 0]) + x[:, -1] + 0.3 * rng.normal(size=n)
    return x, y


def mixed_data(seed, n=60):
    rng = np.random.default_rng(seed)
    x = np.column_stack(
        [rng.uniform(0, 5, n), rng.integers(0, 4, n), rng.integers(0, 3, n)]
    ).astype(float)
    y = np.sin(x[:, 0]) + 0.5 * x[:, 1] - x[:, 2] + 0.2 * rng.normal(size=n)
    return x, y


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


@pytest.mark.parametrize(
    ("reg_type", "method", "sm_bw"),
    [("lc", "cv", "cv_ls"), ("ll", "cv", "cv_ls"), ("lc", "aicc", "aic")],
)
@pytest.mark.parametrize("seed", [0, 1])
def test_selected_bandwidth_is_at_least_as_good_as_statsmodels(reg_type, method, sm_bw, seed):
    x, y = continuous_data(seed, n=80, d=1)
    reference = KernelReg(y, x, "c", reg_type=reg_type, bw=sm_bw)
    if method == "cv":
        theirs = float(np.squeeze(reference.cv_loo(reference.bw, reference.est[reg_type])))
    else:
        theirs = float(np.squeeze(reference.aic_hurvich(reference.bw)))
    ours = select_bandwidth(x, y, method=method, degree=0 if reg_type == "lc" else 1)
    assert ours.objective <= theirs + 1e-12 * abs(theirs)
    np.testing.assert_allclose(ours.bandwidth, reference.bw, rtol=1e-2)


def test_cv_search_finds_the_global_minimum():
    # Two well-separated regimes give the CV curve two local minima; a search that
    # starts at the rule of thumb and walks downhill (statsmodels' fmin) can stop in
    # the wrong one. The grid + gradient search must reach the curve's lowest value.
    x, y = continuous_data(7, n=120, d=1)
    candidates = np.geomspace(0.01, 5, 400)
    curve = cv_curve(x, y, candidates)
    selection = select_bandwidth(x, y, method="cv")
    assert selection.objective <= np.min(curve[np.isfinite(curve)]) + 1e-12
    np.testing.assert_allclose(
        cv_curve(x, y, selection.bandwidth[None, :]), [selection.objective], rtol=1e-9
    )


def test_cv_curve_matches_brute_force_refits():
    x, y = continuous_data(8, n=30, d=1)
    for h in [0.2, 0.7]:
        brute = np.mean(
            [
                (
                    y[i]
                    - local_regression(
                        np.delete(x, i, 0), np.delete(y, i), x[i : i + 1], bandwidth=h
                    )[0]
                )
                ** 2
                for i in range(len(y))
            ]
        )
        np.testing.assert_allclose(cv_curve(x, y, [h]), [brute], rtol=1e-10)


def test_cv_with_compact_kernel_scores_empty_neighbourhoods_as_inf():
    x = np.array([0.0, 0.1, 0.2, 5.0, 5.1, 5.2])
    y = np.arange(6.0)
    assert cv_curve(x, y, [0.05], kernel="epanechnikov")[0] == np.inf
    assert np.isfinite(cv_curve(x, y, [1.0], kernel="epanechnikov")[0])


@pytest.mark.parametrize("kernel", ["gaussian", "epanechnikov", "tricube", "laplacian"])
def test_selection_for_every_kernel_and_streamed(kernel):
    x, y = continuous_data(9, n=150, d=1)
    dense = select_bandwidth(x, y, kernel=kernel)
    streamed = select_bandwidth(x, y, kernel=kernel, block_size=32)
    np.testing.assert_allclose(streamed.objective, dense.objective, rtol=1e-9)
    assert np.isfinite(dense.objective)


def test_mixed_data_selection():
    x, y = mixed_data(10, n=80)
    selection = select_bandwidth(x, y, var_type="cou")
    assert (
        0 < selection.bandwidth[0]
        and 0 <= selection.bandwidth[1] < 1
        and 0 <= selection.bandwidth[2] < 1
    )
    assert np.isfinite(selection.objective)
    reference = KernelReg(y, x, "cou", reg_type="lc", bw=list(selection.bandwidth))
    expected = float(np.squeeze(reference.cv_loo(selection.bandwidth, reference.est["lc"])))
    np.testing.assert_allclose(selection.objective, expected, rtol=1e-9)


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


def test_rules_of_thumb():
    x, _ = continuous_data(11, n=200, d=2)
    sigma = x.std(axis=0, ddof=1)
    np.testing.assert_allclose(rule_of_thumb(x), 1.059 * sigma * 200 ** (-1 / 6))
    # a kernel's rule follows from the Gaussian's by the ratio of canonical bandwidths
    ratio = rule_of_thumb(x, kernel="epanechnikov") / rule_of_thumb(x)
    np.testing.assert_allclose(ratio, (15**0.2) / (1 / (2 * np.sqrt(np.pi))) ** 0.2, rtol=1e-12)
    assert np.all(rule_of_thumb(x, method="silverman") <= rule_of_thumb(x) * 0.9 / 1.059 + 1e-12)


@pytest.mark.parametrize(
    ("kwargs", "pattern"),
    [
        (
            {"method": "aic"},
            r"method: expected one of 'cv', 'aicc', 'scott', 'silverman'; received 'aic'",
        ),
        ({"var_type": "cx"}, r"var_type: expected a string of 1 letters"),
        (
            {"degree": 2},
            r"degree: expected 0 \(Nadaraya–Watson\) or 1 \(local linear\); received 2",
        ),
        ({"kernel": "dot"}, r"kernel: regression needs a distance kernel"),
    ],
)
def test_selection_errors(kwargs, pattern):
    x, y = continuous_data(12, n=20, d=1)
    with pytest.raises(ValueError, match=pattern):
        select_bandwidth(x, y, **kwargs)


def test_too_few_rows():
    with pytest.raises(
        ValueError, match="X: bandwidth selection needs at least 3 rows; received n_samples=2"
    ):
        select_bandwidth([0.0, 1.0], [1.0, 2.0])


def test_categorical_bandwidth_must_be_below_one():
    x, y = mixed_data(13, n=20)
    with pytest.raises(ValueError, match=r"bandwidth: column 1 is categorical \('o'\)"):
        local_regression(x, y, x, bandwidth=[0.5, 1.0, 0.2], var_type="cou")


@pytest.mark.parametrize("kernel", ["gaussian", "epanechnikov", "laplacian"])
@pytest.mark.parametrize("degree", [0, 1])
def test_binned_loo_objective_matches_the_exact_one(kernel, degree):
    from attnpool.criteria import binned_loo_residuals
    from attnpool.methods import binned

    x, y = continuous_data(14, n=1500, d=1)
    model = model_for(x, kernel=kernel, degree=degree)
    grid = binned.grid_for(x[:, 0], 0.02)
    reach = binned.reach_for(model.kernel, 2.0, grid)
    with jax.enable_x64(True):
        for h in [0.05, 0.2, 1.0]:
            args = (jnp.asarray(x), jnp.asarray(y)[:, None], jnp.asarray([h]), model)
            approximate = float(jnp.mean(binned_loo_residuals(*args, grid, reach) ** 2))
            exact = float(jnp.mean(loo_residuals(*args) ** 2))
            np.testing.assert_allclose(approximate, exact, rtol=1e-4)  # 16+ nodes per bandwidth


@pytest.mark.parametrize("degree", [0, 1])
def test_binned_search_reaches_the_exact_minimum(degree):
    # n >= BINNED_MIN_ROWS: the search runs on the binned objective; the reported
    # objective is exact and no candidate on a fine exact CV curve is lower.
    x, y = continuous_data(15, n=1200, d=1)
    selection = select_bandwidth(x, y, degree=degree)
    exact = cv_curve(x, y, selection.bandwidth[None, :], degree=degree)[0]
    np.testing.assert_allclose(selection.objective, exact, rtol=1e-12)
    around = cv_curve(x, y, selection.bandwidth[0] * np.geomspace(0.9, 1.1, 41), degree=degree)
    assert selection.objective <= around.min() * (1 + 1e-9)


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
        got = local_fit(x[:, None], y[:, None], queries[:, None], h, model, block_size=block_size)
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
        got = local_fit(x, y[:, None], queries, h, model, block_size=block_size)[0]
    want = long_double_local_linear(x, y, queries, "gaussian", h)
    np.testing.assert_allclose(np.asarray(got)[:, 0], want, rtol=1e-9, atol=1e-9)
