"""jit, grad and vmap through attention_pool and attention_weights (float64 finite differences)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from attnpool import attention_pool, attention_weights
from reference import reference_pool


@pytest.fixture(autouse=True)
def x64():
    with jax.enable_x64(True):
        yield


def data(d=2, p=2, seed=0):
    rng = np.random.default_rng(seed)
    return (
        jnp.asarray(rng.uniform(0, 1, (6, d))),
        jnp.asarray(rng.uniform(0, 1, (9, d))),
        jnp.asarray(rng.normal(size=(9, p))),
    )


def finite_difference(f, x, eps=1e-6):
    x = np.asarray(x, dtype=np.float64)
    grad = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[index] = eps
        grad[index] = (f(jnp.asarray(x + step)) - f(jnp.asarray(x - step))) / (2 * eps)
    return grad


# Compact kernels with a support wide enough that no key sits on its edge.
CASES = [
    ("gaussian", 0.3),
    ("laplacian", 0.4),
    ("epanechnikov", 3.0),
    ("tricube", 3.0),
    ("dot", 0.7),
]


@pytest.mark.parametrize(("kernel", "h"), CASES)
@pytest.mark.parametrize("block_size", [None, 4])
@pytest.mark.parametrize("argument", ["queries", "keys", "values", "bandwidth"])
def test_gradients_match_finite_differences(kernel, h, block_size, argument):
    queries, keys, values = data()
    inputs = {
        "queries": queries,
        "keys": keys,
        "values": values,
        "bandwidth": jnp.array([h, 1.3 * h]),
    }
    weights = jnp.asarray(np.random.default_rng(1).normal(size=(6, 2)))

    def loss(x):
        args = {**inputs, argument: x}
        pooled = attention_pool(
            args["queries"],
            args["keys"],
            args["values"],
            kernel=kernel,
            bandwidth=args["bandwidth"],
            block_size=block_size,
        )
        return jnp.sum(pooled * weights)

    got = jax.grad(loss)(inputs[argument])
    np.testing.assert_allclose(got, finite_difference(loss, inputs[argument]), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("kernel", ["gaussian", "laplacian", "triangular", "tricube", "cosine"])
def test_gradient_where_a_query_equals_a_key_is_finite(kernel):
    keys = jnp.array([0.0, 1.0, 2.0])

    def loss(q):
        return attention_pool(q, keys, keys, kernel=kernel, bandwidth=3.0).sum()

    assert np.all(np.isfinite(jax.grad(loss)(jnp.array([1.0]))))


def test_gradient_of_weights():
    queries, keys, _ = data(d=1)

    def loss(h):
        return jnp.sum(attention_weights(queries, keys, bandwidth=h) ** 2)

    np.testing.assert_allclose(jax.grad(loss)(0.3), finite_difference(loss, 0.3), rtol=1e-6)


def test_jit_and_vmap():
    queries, keys, values = data(d=1, p=1)

    @jax.jit
    def pooled(h):
        return attention_pool(queries, keys, values, bandwidth=h)

    batch = jax.vmap(pooled)(jnp.array([0.1, 0.3, 1.0]))
    for row, h in zip(batch, [0.1, 0.3, 1.0], strict=True):
        np.testing.assert_allclose(
            row, reference_pool(queries, keys, values, "gaussian", h), rtol=1e-12
        )
    per_query = jax.vmap(lambda q: attention_pool(q[None], keys, values, bandwidth=0.3)[0])(queries)
    np.testing.assert_allclose(per_query, pooled(0.3), rtol=1e-12)


def test_gradients_under_streaming_do_not_store_the_full_matrix():
    # Reverse mode through the streamed scan is rematerialised: the compiled
    # gradient's temporaries stay far below one n × m matrix.
    n = m = 4096
    queries = jnp.linspace(0.0, 1.0, n, dtype=jnp.float32)
    keys = jnp.linspace(0.0, 1.0, m, dtype=jnp.float32)

    def loss(q):
        return attention_pool(q, keys, keys, bandwidth=0.01, block_size=256).sum()

    compiled = jax.jit(jax.grad(loss)).lower(queries).compile()
    temp_bytes = compiled.memory_analysis().temp_size_in_bytes
    assert temp_bytes < n * m * 4 / 4, temp_bytes
