"""Learned attention (attnpool.learn): gradients, training, and what training finds."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import attnpool
from attnpool import LearnedAttentionRegressor, datasets, learn, select_bandwidth
from attnpool.learn import (
    AdaptiveBandwidth,
    AdditiveScore,
    DotProductScore,
    GlobalBandwidth,
    LinearMetric,
    PerDimensionBandwidth,
    fit_attention,
    learned_pool,
)
from reference import reference_pool
from sklearn_checks import scikit_learn_checks

MODELS = [
    GlobalBandwidth(),
    GlobalBandwidth(kernel="laplacian"),
    PerDimensionBandwidth(),
    LinearMetric(),
    LinearMetric(rank=1),
    AdaptiveBandwidth(hidden=4),
    DotProductScore(dim=3),
    AdditiveScore(hidden=3),
]


def _data(n=30, d=2, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, (n, d))
    y = np.sin(3 * x[:, 0]) + 0.1 * rng.normal(size=n)
    return x, y


def _loo_loss(model, params, x, y):
    fit, _ = learned_pool(model, params, x, x, y[:, None], leave_out=jnp.arange(x.shape[0]))
    return jnp.mean((fit[:, 0] - y) ** 2)


@pytest.mark.parametrize("model", MODELS, ids=repr)
def test_gradients_of_every_model_match_finite_differences(model):
    x, y = _data()
    with jax.enable_x64(True):
        x, y = jnp.asarray(x), jnp.asarray(y)
        params = model.init(jax.random.key(1), x, jnp.ones(x.shape[1]))
        # move away from the zero-initialised layers, so every parameter has a gradient
        leaves, tree = jax.tree.flatten(params)
        keys = jax.random.split(jax.random.key(2), len(leaves))
        leaves = [
            p + 0.3 * jax.random.normal(k, p.shape, p.dtype)
            for p, k in zip(leaves, keys, strict=True)
        ]
        params = jax.tree.unflatten(tree, leaves)
        grads = jax.grad(_loo_loss, argnums=1)(model, params, x, y)
        flat, unravel = jax.flatten_util.ravel_pytree(params)
        analytic = jax.flatten_util.ravel_pytree(grads)[0]
        step = 1e-6
        numeric = []
        for i in range(flat.shape[0]):
            e = jnp.zeros_like(flat).at[i].set(step)
            up = _loo_loss(model, unravel(flat + e), x, y)
            down = _loo_loss(model, unravel(flat - e), x, y)
            numeric.append((up - down) / (2 * step))
        np.testing.assert_allclose(analytic, np.array(numeric), rtol=1e-5, atol=1e-8)


def test_learned_pool_with_a_bandwidth_is_the_textbook_formula():
    x, y = _data(n=25, d=2)
    model = PerDimensionBandwidth()
    params = {"log_bandwidth": np.log([0.3, 0.7])}
    with jax.enable_x64(True):
        fit, _ = learned_pool(
            model, params, jnp.asarray(x), jnp.asarray(x), jnp.asarray(y)[:, None]
        )
    np.testing.assert_allclose(fit[:, 0], reference_pool(x, x, y, "gaussian", [0.3, 0.7]))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("model", [GlobalBandwidth(), PerDimensionBandwidth(),
                                   AdaptiveBandwidth(hidden=4)], ids=repr)  # fmt: skip
def test_a_bandwidth_too_small_to_represent_takes_the_nearest_keys(model, dtype):
    # a float32 log-bandwidth below −88 made the embedded inputs inf and the pool NaN
    x, y = _data(n=25, d=2)
    queries = x[:6] + 0.01
    with jax.enable_x64(dtype == np.float64):
        params = model.init(jax.random.PRNGKey(0), jnp.asarray(x, dtype), np.ones(2))
        tiny = jax.tree.map(lambda a: jnp.full_like(a, -200.0), params)
        if isinstance(model, AdaptiveBandwidth):  # the network adds nothing: log h is −200
            tiny["network"] = jax.tree.map(jnp.zeros_like, params["network"])
        fit, empty = learned_pool(model, tiny, *(jnp.asarray(a, dtype) for a in (queries, x)),
                                  jnp.asarray(y, dtype)[:, None])  # fmt: skip
    nearest = np.argmin(np.sum((queries[:, None] - x[None]) ** 2, axis=2), axis=1)
    np.testing.assert_array_equal(np.asarray(empty), False)
    np.testing.assert_allclose(np.asarray(fit)[:, 0], y[nearest], rtol=1e-6)


def test_streamed_and_dense_learned_pools_agree():
    rng = np.random.default_rng(3)
    queries, keys = rng.normal(size=(1500, 2)), rng.normal(size=(2000, 2))
    values = rng.normal(size=(2000, 1))
    model = AdditiveScore(hidden=4)
    with jax.enable_x64(True):
        params = model.init(jax.random.key(0), jnp.asarray(keys), jnp.ones(2))
        streamed, _ = learned_pool(model, params, queries, keys, values)  # 1500·2000·4 pairs
        dense = [
            learned_pool(model, params, queries[i : i + 100], keys, values)[0]
            for i in range(0, 1500, 100)
        ]
    np.testing.assert_allclose(streamed, np.concatenate(dense), rtol=1e-10)


# --- the classic parametric Nadaraya–Watson on the sine data ---------------------------


@pytest.fixture(scope="module")
def sine():
    data = datasets.sine_data()
    return data, select_bandwidth(data.x_train, data.y_train)


@pytest.mark.parametrize("initial", [0.05, 0.3, 1.0, 3.0])
def test_learned_bandwidth_reaches_the_cross_validated_error(sine, initial):
    data, selection = sine
    fit = fit_attention(GlobalBandwidth(initial=initial), data.x_train, data.y_train)
    assert fit.loo_error() <= selection.objective * 1.01
    assert fit.parameters()["bandwidth"] == pytest.approx(selection.bandwidth[0], rel=0.02)
    # no overshoot: the loss never climbs far above where it started, and ends lowest
    assert np.all(np.isfinite(fit.history))
    assert fit.history.max() <= fit.history[0] * 1.001
    assert fit.history[-1] <= fit.history.min() * 1.001


def _textbook_recipe(x, y, w):
    """D2L §11.2: w scales the distance, plain SGD on the summed loss, lr 0.5, 5 epochs."""

    def loss(w):
        scores = -(((x[:, None] - x[None, :]) * w) ** 2) / 2
        scores = jnp.where(jnp.eye(x.shape[0], dtype=bool), -jnp.inf, scores)
        return jnp.sum((jax.nn.softmax(scores, axis=1) @ y - y) ** 2)

    for _ in range(5):
        w = w - 0.5 * jax.grad(loss)(w)
    return float(loss(w)) / x.shape[0]


def test_the_textbook_recipe_overshoots_where_ours_converges(sine):
    data, selection = sine
    with jax.enable_x64(True):
        textbook = _textbook_recipe(jnp.asarray(data.x_train), jnp.asarray(data.y_train), 0.5)
    assert textbook > 1.3 * selection.objective  # w = 0.5 jumps far past the optimum
    ours = fit_attention(GlobalBandwidth(initial=1 / 0.5), data.x_train, data.y_train)
    assert ours.loo_error() <= selection.objective * 1.01


def test_without_leaving_one_out_the_trivial_solution_wins(sine):
    data, selection = sine
    fit = fit_attention("bandwidth", data.x_train, data.y_train, loss="mse")
    assert fit.parameters()["bandwidth"] < selection.bandwidth[0] / 10
    assert fit.history[-1] < 0.2 * selection.objective  # it interpolates the noise
    held_out = np.mean((fit.predict(data.x_val) - data.y_val) ** 2)
    honest = fit_attention("bandwidth", data.x_train, data.y_train)
    assert held_out > np.mean((honest.predict(data.x_val) - data.y_val) ** 2)


def test_training_is_deterministic_for_a_seed():
    x, y = _data(n=60)
    runs = [fit_attention("additive", x, y, steps=30, batch_size=16, seed=4) for _ in range(2)]
    np.testing.assert_array_equal(runs[0].history, runs[1].history)
    other = fit_attention("additive", x, y, steps=30, batch_size=16, seed=5)
    assert not np.array_equal(runs[0].history, other.history)


def test_minibatches_and_early_stopping():
    x, y = _data(n=200, d=1, seed=1)
    fit = fit_attention("bandwidth", x, y, steps=400, batch_size=32, validation=0.25, patience=20)
    assert fit.stopped_early and len(fit.history) < 400
    assert len(fit.validation_history) == len(fit.history)
    assert fit.validation_history[fit.best_step] == fit.validation_history.min()
    assert fit.x_train.shape == (150, 1)


def test_a_given_validation_set_and_a_custom_optimizer():
    x, y = _data(n=80, d=1, seed=2)
    xv, yv = _data(n=40, d=1, seed=3)
    fit = fit_attention("bandwidth", x, y, optimizer=optax.sgd(0.05), steps=50, validation=(xv, yv))
    kept = fit.validation_history[fit.best_step]
    assert kept == pytest.approx(np.mean((fit.predict(xv) - yv) ** 2), rel=1e-9)


def test_progress_bar_shows_the_loss(capsys):
    x, y = _data(n=50, d=1)
    progress = []
    fit_attention("bandwidth", x, y, steps=5, progress=lambda *a: progress.append(a))
    assert [p[:2] for p in progress] == [(i, 5) for i in range(1, 6)]
    assert progress[-1][2].startswith("loss ")


# --- what the richer models learn ------------------------------------------------------


def test_ard_switches_off_an_irrelevant_input():
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 5, (300, 2))
    y = 2 * np.sin(x[:, 0]) + x[:, 0] + rng.normal(0, 0.3, 300)
    test = rng.uniform(0, 5, (500, 2))
    truth = 2 * np.sin(test[:, 0]) + test[:, 0]
    ard = fit_attention("ard", x, y, steps=400)
    h = ard.parameters()["bandwidth"]
    assert h[1] >= 10 * h[0]
    single = fit_attention("bandwidth", x, y, steps=400)
    assert np.mean((ard.predict(test) - truth) ** 2) < np.mean((single.predict(test) - truth) ** 2)


def test_a_learned_metric_recovers_a_rotated_signal():
    rng = np.random.default_rng(1)
    direction = np.array([np.cos(0.6), np.sin(0.6)])
    x = rng.uniform(-2, 2, (300, 2))
    y = np.sin(2 * x @ direction) + rng.normal(0, 0.1, 300)
    fit = fit_attention(LinearMetric(rank=1), x, y, steps=500)
    learned = fit.parameters()["metric"][0]
    cosine = abs(learned @ direction) / np.linalg.norm(learned)
    assert cosine > 0.98


def test_dot_product_attention_gradient_is_the_keys_covariance():
    # keys = values, scores q·k: ∇_q Σ_i softmax(q·k)_i k_i = Cov_{p(k; q)}[k]
    rng = np.random.default_rng(2)
    keys, query = rng.normal(size=(50, 3)), rng.normal(size=3)
    with jax.enable_x64(True):
        jacobian = jax.jacfwd(
            lambda q: attnpool.attention_pool(q[None], keys, keys, kernel="dot", bandwidth=1.0)[0]
        )(jnp.asarray(query))
    p = np.exp(keys @ query - (keys @ query).max())
    p /= p.sum()
    mean = p @ keys
    covariance = (keys - mean).T @ ((keys - mean) * p[:, None])
    np.testing.assert_allclose(jacobian, covariance, rtol=1e-10, atol=1e-12)


def test_an_adaptive_bandwidth_beats_a_global_one_on_uneven_data():
    # a smooth trend where points are sparse, fast wiggles where they are dense
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.uniform(0, 1, 300), rng.uniform(1, 5, 40)])
    truth = lambda t: np.where(t < 1, np.sin(12 * t), np.sin(12.0)) + 0.3 * t  # noqa: E731
    y = truth(x) + rng.normal(0, 0.1, x.shape)
    adaptive = fit_attention(AdaptiveBandwidth(), x, y, steps=500)
    single = fit_attention("bandwidth", x, y, steps=500)
    assert adaptive.loo_error() < single.loo_error()
    grid = np.linspace(0, 5, 1001)
    error = lambda fit: np.mean((fit.predict(grid) - truth(grid)) ** 2)  # noqa: E731
    assert error(adaptive) < 0.5 * error(single)


# --- errors and the estimator ----------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda x, y: fit_attention("kernel-of-doom", x, y), "model: expected an AttentionModel"),
        (lambda x, y: fit_attention(GlobalBandwidth(kernel="boxcar"), x, y), "kernel: expected"),
        (lambda x, y: fit_attention("bandwidth", x, y, loss="l1"), "loss: expected one of"),
        (lambda x, y: fit_attention("bandwidth", x, y, steps=0), "steps: expected"),
        (lambda x, y: fit_attention("bandwidth", x, y, learning_rate=-1), "learning_rate"),
        (lambda x, y: fit_attention("bandwidth", x, y, validation=1.5), "validation: expected"),
        (lambda x, y: fit_attention("bandwidth", x, y[:5]), "y: expected one row per key"),
        (lambda x, y: fit_attention(GlobalBandwidth(initial=-1.0), x, y), "initial: expected"),
        (lambda x, y: fit_attention(LinearMetric(rank=5), x, y), "rank: expected"),
        (lambda x, y: fit_attention("bandwidth", x[:1], y[:1]), "at least 2 samples"),
    ],
)
def test_bad_input_names_the_argument(call, match):
    x, y = _data(n=20, d=2)
    with pytest.raises(ValueError, match=match):
        call(x, y)


def test_divergence_is_an_error_not_nan():
    x, y = _data(n=20, d=1)
    with pytest.raises(ValueError, match="training diverged at step"):
        fit_attention("dot", x, y * 1e200, optimizer=optax.sgd(1e300), steps=5)


@scikit_learn_checks(
    [LearnedAttentionRegressor(steps=3), LearnedAttentionRegressor("ard", steps=3)]
)
def test_scikit_learn_estimator_checks(estimator, check):
    check(estimator)


def test_estimator_matches_the_function_and_has_nadaraya_watson_weights(sine):
    data, _ = sine
    X = data.x_train[:, None]
    estimator = LearnedAttentionRegressor().fit(X, data.y_train)
    fit = fit_attention("bandwidth", data.x_train, data.y_train)
    np.testing.assert_allclose(estimator.predict(data.x_val[:, None]), fit.predict(data.x_val))
    weights = estimator.attention_weights(data.x_val[:, None])
    reference = attnpool.NadarayaWatson(bandwidth=estimator.bandwidth_).fit(X, data.y_train)
    np.testing.assert_allclose(
        weights, reference.attention_weights(data.x_val[:, None]), atol=1e-12
    )
    assert learn.model_names() == ["bandwidth", "ard", "metric", "adaptive", "dot", "additive"]
