"""The kernel registry: formulas, metadata (checked by quadrature), user kernels."""

import math

import jax.numpy as jnp
import numpy as np
import pytest

import attnpool
from attnpool import Kernel, attention_pool, kernels
from reference import KERNEL_VALUES, reference_pool

BUILT_IN = [
    "gaussian",
    "boxcar",
    "constant",
    "triangular",
    "epanechnikov",
    "tricube",
    "laplacian",
    "cosine",
    "biweight",
    "triweight",
    "dot",
]


def test_names_list_the_built_in_kernels():
    assert set(BUILT_IN) <= set(kernels.names())


@pytest.mark.parametrize("name", [n for n in BUILT_IN if n not in ("constant", "dot")])
def test_normalised_density_variance_and_roughness_by_quadrature(name):
    kernel = kernels.get(name)
    u = np.linspace(-40, 40, 800_001)
    density = kernel(u)
    np.testing.assert_allclose(density, KERNEL_VALUES[name](np.abs(u)), atol=1e-12)
    np.testing.assert_allclose(
        np.trapezoid(density, u), 1.0, atol=1e-4
    )  # a step at the edge costs h/2
    np.testing.assert_allclose(np.trapezoid(u**2 * density, u), kernel.variance, atol=1e-4)
    np.testing.assert_allclose(np.trapezoid(density**2, u), kernel.roughness, atol=1e-4)
    outside = np.abs(u) > kernel.support
    assert np.all(density[outside] == 0)


@pytest.mark.parametrize("name", BUILT_IN)
def test_each_kernel_documents_its_formula_and_bandwidth(name):
    doc = kernels.get(name).doc
    assert "K(" in doc and ("bandwidth" in doc or "temperature" in doc)


def test_constant_kernel_is_improper():
    kernel = kernels.get("constant")
    assert kernel.variance == math.inf and not kernel.compact


def test_callable_kernel():
    def cauchy(u):
        """Cauchy: K(u) = 1 / (1 + u²)."""
        return 1.0 / (1.0 + u**2)

    queries, keys, values = np.linspace(0, 1, 5), np.linspace(0, 1, 7), np.arange(7.0)
    got = attention_pool(queries, keys, values, kernel=cauchy, bandwidth=0.2)
    distances = np.abs(queries[:, None] - keys[None]) / 0.2
    weights = cauchy(distances)
    np.testing.assert_allclose(got, (weights / weights.sum(1, keepdims=True)) @ values)
    assert kernels.get(cauchy) is kernels.get(cauchy)  # one record per callable
    assert "Cauchy" in kernels.get(cauchy).doc


def test_callable_kernel_that_goes_negative_is_rejected():
    with pytest.raises(
        ValueError, match=r"kernel: a callable kernel must map .* K\(u\) >= 0; 'bad'"
    ):
        Kernel.from_function(lambda u: 1 - u, name="bad")


def test_register_a_kernel_by_its_log_profile():
    quartic = Kernel(
        "quartic-test",
        lambda r2: jnp.where(r2 < 1, 2 * jnp.log1p(-jnp.where(r2 < 1, r2, 0.0)), -jnp.inf),
        support=1.0,
        variance=1 / 7,
        roughness=5 / 7,
        log_norm=math.log(15 / 16),
    )
    kernels.register(quartic)
    assert "quartic-test" in kernels.names()
    with pytest.raises(ValueError, match="already registered"):
        kernels.register(quartic)
    queries, keys, values = np.linspace(0, 1, 5), np.linspace(0, 1, 7), np.arange(7.0)
    got = attention_pool(queries, keys, values, kernel="quartic-test", bandwidth=2.0)
    weights = np.clip(1 - (np.abs(queries[:, None] - keys[None]) / 2.0) ** 2, 0, None) ** 2
    np.testing.assert_allclose(got, (weights / weights.sum(1, keepdims=True)) @ values)


def test_dot_kernel_is_softmax_attention_with_temperature():
    rng = np.random.default_rng(0)
    queries, keys, values = (
        rng.normal(size=(4, 3)),
        rng.normal(size=(6, 3)),
        rng.normal(size=(6, 2)),
    )
    scores = queries @ keys.T / 0.5
    softmax = np.exp(scores - scores.max(1, keepdims=True))
    softmax /= softmax.sum(1, keepdims=True)
    np.testing.assert_allclose(
        attention_pool(queries, keys, values, kernel="dot", bandwidth=0.5), softmax @ values
    )
    np.testing.assert_allclose(
        attention_pool(queries, keys, values, kernel="dot", bandwidth=0.5),
        reference_pool(queries, keys, values, "dot", 0.5),
    )


def test_kernel_records_are_reexported():
    assert attnpool.Kernel is Kernel


def test_the_textbooks_kernels_pasted_as_printed():
    # d2l's chapter: nadaraya_watson(x_train, y_train, x_val, kernel), its kernels of the
    # signed distance written with jax.numpy (its "epanechikov" is the triangle)
    import jax.numpy as jnp

    from attnpool import datasets, nadaraya_watson
    from attnpool.engines import numpy_engine
    from attnpool.sums.local_model import model_for

    def gaussian(x):
        return jnp.exp(-(x**2) / 2)

    def boxcar(x):
        return jnp.abs(x) < 1.0

    def constant(x):
        return 1.0 + 0 * x

    def epanechikov(x):
        return jnp.maximum(1 - jnp.abs(x), jnp.zeros_like(x))

    data = datasets.sine_data(n=40, seed=0)
    x_train, y_train, x_val = data.x_train, data.y_train, data.x_val
    for function, name in [(gaussian, "gaussian"), (boxcar, "boxcar"),
                           (constant, "constant"), (epanechikov, "triangular")]:  # fmt: skip
        y_hat = nadaraya_watson(x_train, y_train, x_val, function)  # the fourth argument
        want = nadaraya_watson(x_train, y_train, x_val, kernel=name, empty="nearest")
        np.testing.assert_allclose(y_hat, want, rtol=1e-13, err_msg=name)
        # summed on the host: no pooling program for each new Python function
        model = model_for(x_train[:, None], kernel=function)
        assert numpy_engine.serves(model, x_val.size, x_train.size, 1)
        profile = model.kernel.log_profile(np.array([0.25, 4.0]))
        assert isinstance(profile, np.ndarray) and profile.dtype == np.float64
    _, weights = nadaraya_watson(x_train, y_train, x_val, gaussian, return_weights=True)
    assert weights.shape == (x_val.size, x_train.size)  # queries × keys: the book's transposed
    np.testing.assert_allclose(weights.sum(axis=1), 1.0)


def _log_quartic(r2):
    """A user's quartic (a module-level function: picklable by reference)."""
    return np.where(r2 < 1, 2 * np.log1p(-np.where(r2 < 1, r2, 0.0)), -np.inf)


@pytest.mark.parametrize("name", kernels.names())
def test_a_pickled_built_in_comes_back_as_the_same_record(name):
    # a Dask task's kernel reaches its worker pickled: a copy was no longer built in, and
    # its chunks lost fgt, sparse and native (a Gaussian column's chunk went to the
    # compiled engine, 125 ms a task against fgt's 15 ms); higher-order kernels, whose
    # profiles are made in a function, could not be pickled at all
    import pickle

    import cloudpickle

    record = kernels.get(name)
    for module in (pickle, cloudpickle):
        again = module.loads(module.dumps(record))
        assert again is record and kernels.is_builtin(again)


def test_a_pickled_user_kernel_stays_a_user_kernel():
    import pickle

    quartic = Kernel("quartic-pickled", _log_quartic, support=1.0, log_norm=math.log(15 / 16))
    again = pickle.loads(pickle.dumps(quartic))
    assert again == quartic and again is not quartic and not kernels.is_builtin(again)
