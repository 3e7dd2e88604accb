"""``binned`` beyond the smooth built-in kernels: the boxcar (KDEpy's ``FFTKDE(kernel=
"box")``), the constant kernel and kernels of your own, for pooling and for densities with
observation weights, each within the method's tolerance of the textbook formula (the
boxcar's density of KDEpy's exact ``NaiveKDE``); what ``binned`` cannot bin is refused."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest
from KDEpy import NaiveKDE

import attnpool
from attnpool import Binned, kernels
from attnpool.methods import binned_bound
from method_data import data, value_range
from reference import nearest_values, reference_pool

#: A kernel of one's own, smooth and without a compact support, and one with a kink.
QUARTIC_EXP = kernels.Kernel.from_function(lambda u: jnp.exp(-(u**4)), name="quartic-exp")
CONE = kernels.Kernel.from_function(lambda u: jnp.maximum(1 - u, 0.0) ** 1.5, name="cone-1.5")
PROFILES = {
    "quartic-exp": lambda u: np.exp(-(u**4)),
    "cone-1.5": lambda u: np.maximum(1 - u, 0.0) ** 1.5,
}


def name(kernel) -> str:
    return kernel if isinstance(kernel, str) else kernel.name


def textbook(queries, keys, values, kernel, bandwidth):
    """Distances → kernel → normalise over keys → weighted sum, in float64; a row with
    no weight takes its nearest key's value (``empty="nearest"``)."""
    if isinstance(kernel, str):
        with np.errstate(invalid="ignore"):
            pooled = reference_pool(queries, keys, values, kernel, bandwidth)
    else:
        u = np.sqrt((((queries[:, None, :] - keys[None, :, :]) / bandwidth) ** 2).sum(-1))
        weights = PROFILES[kernel.name](u)
        with np.errstate(invalid="ignore"):
            pooled = (weights / weights.sum(axis=1, keepdims=True)) @ values
    empty = ~np.isfinite(pooled[:, 0])
    if np.any(empty):
        pooled[empty] = nearest_values(queries[empty], keys, values)
    return pooled


@pytest.mark.parametrize("kernel", ["boxcar", "constant", QUARTIC_EXP, CONE], ids=name)
@pytest.mark.parametrize("d", [1, 2])
@pytest.mark.parametrize("layout", ["uniform", "clustered"])
def test_binned_pools_every_radial_kernel_within_its_tolerance(kernel, d, layout):
    queries, keys, values = data(40 + d, n=150, d=d, layout=layout, m=1500)
    for bandwidth, tolerance in [(0.2, 1e-3), (0.7, 1e-4)]:
        got = attnpool.attention_pool(
            queries, keys, values, kernel=kernel, bandwidth=bandwidth,
            method=Binned(tolerance=tolerance), empty="nearest",
        )  # fmt: skip
        want = textbook(queries, keys, values, kernel, bandwidth)
        assert np.all(np.max(np.abs(got - want), axis=0) <= tolerance * value_range(values))


def test_the_boxcar_density_is_kdepys_within_the_tolerance(monkeypatch):
    # KDEpy's box kernel takes its standard deviation as bw: half-width / sqrt(3)
    x = np.random.default_rng(0).normal(size=2000)
    grid = np.linspace(-3.3, 3.3, 157)
    want = NaiveKDE(kernel="box", bw=0.4 / np.sqrt(3)).fit(x).evaluate(grid)
    evaluated = []

    def recorded(kernel, spacing, largest):
        evaluated.append(1 / np.min(spacing))
        return radial_error_bound(kernel, spacing, largest)

    radial_error_bound = binned_bound.radial_error_bound
    monkeypatch.setattr(binned_bound, "radial_error_bound", recorded)
    binned_bound.relative_bound.cache_clear()
    for tolerance in (1e-3, 1e-6):
        got = attnpool.kernel_density(x[:, None], grid[:, None], kernel="boxcar", bandwidth=0.4,
                                      method=Binned(tolerance=tolerance))  # fmt: skip
        assert np.all(np.abs(got - want) <= tolerance * want)
    # a boxcar's binning error falls as the nodes per bandwidth: 1e-6 would take more
    # nodes than 2^22 over the data and the reach (about 20 bandwidths) allow four times
    # over, which the search knows once it evaluates the bound there (16 table entries a
    # node; it went on to 2^20 nodes): the rows are summed exactly
    assert 2**19 < max(evaluated) < 2**20


@pytest.mark.parametrize("kernel", ["boxcar", QUARTIC_EXP], ids=name)
def test_binned_weighted_densities_of_any_radial_kernel(kernel):
    rng = np.random.default_rng(5)
    x = rng.normal(size=(1500, 2))
    w = rng.uniform(0.1, 3.0, 1500)
    q = rng.normal(size=(120, 2))
    got = attnpool.kernel_density(x, q, kernel=kernel, bandwidth=0.5, weights=w,
                                  method=Binned(tolerance=1e-4))  # fmt: skip
    want = attnpool.kernel_density(x, q, kernel=kernel, bandwidth=0.5, weights=w, method="dense")
    # the dense density against the textbook's weighted sum of kernel values
    u = np.sqrt((((q[:, None, :] - x[None, :, :]) / 0.5) ** 2).sum(-1))
    profile = (u < 1) * 0.5 if kernel == "boxcar" else PROFILES[kernel.name](u)
    sums = profile @ w
    positive = want > 0
    assert np.array_equal(positive, sums > 0)
    ratio = want[positive] / sums[positive]  # the normalising constant, the same everywhere
    np.testing.assert_allclose(ratio, ratio[0], rtol=1e-12)
    assert np.all(np.abs(got - want) <= 1e-4 * want)


RADIAL = "'binned' bins radial, non-negative kernels of the Euclidean distance"


@pytest.mark.parametrize(
    "kernel, message",
    [
        ("epanechnikov-product", RADIAL),
        (kernels.with_norm(kernels.get("epanechnikov"), 1), RADIAL),
        ("dot", RADIAL),
        (kernels.higher_order("gaussian", 4), "is summed pair by pair"),
    ],
    ids=name,
)
def test_what_binned_cannot_bin_is_refused(kernel, message):
    queries, keys, values = data(9, n=10, m=100, d=2)
    with pytest.raises(ValueError, match=message):
        attnpool.attention_pool(queries, keys, values, kernel=kernel, bandwidth=0.5,
                                method="binned")  # fmt: skip


def test_a_grid_too_coarse_to_see_a_compact_kernel_bounds_nothing():
    """A hundredth of a node per bandwidth in two columns: the bound's table steps past
    the support at once, and its kernel sum is 0 — the bound is ``inf`` (no bin
    meets a tolerance there), and said without a division by zero."""
    import warnings

    binned_bound.relative_bound.cache_clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert binned_bound.relative_bound(kernels.get("epanechnikov"), 0.01, 2) == np.inf
        assert np.isfinite(binned_bound.relative_bound(kernels.get("epanechnikov"), 4.0, 2))
