"""Searches on clusters far apart: 100 points on ``[0, 30]`` and 40 near ``10⁵``. The
whole sample's standard deviation and quartiles span the gap, so the rule of thumb
smooths across it and the criterion is flat on the grid of multiples of it (every
search chose a bandwidth of tens of thousands, CV 0.47, where 0.3 gives 0.025); the
values' spacing reaches the grid down to each cluster's own bandwidths.

References: leave-one-out CV by the textbook formula in NumPy float64 (distances →
kernel → normalise over the other keys → weighted sum; local linear by its two moment
sums) on a dense grid of bandwidths."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.mark.parametrize("n", [97, 150])
def test_the_compiled_criterion_has_a_gradient_where_the_data_span_many_bandwidths(n):
    """Rows are padded to their bucket with copies of the first, and local linear's moments
    are taken about each row's heaviest key. A padding row's heaviest key was searched
    as if it left out a real key, so the block's larger log weight at its twin overflowed
    (``exp(+5·10⁴)`` on data 100 bandwidths wide): NaN in the padding rows, through
    which the gradient became NaN, and the compiled search stopped at its grid (local
    linear CV 0.01740 at 0.305 on the clusters, where 0.340 gives 0.01733)."""
    import jax
    import jax.numpy as jnp

    from attnpool.engines.local_fits import loo_residuals
    from attnpool.sums.local_model import model_for

    rng = np.random.default_rng(3)
    x = rng.uniform(0, 1, (n, 1))
    y = np.sin(6 * x) + rng.normal(0, 0.1, x.shape)
    model = model_for(x, var_type="c", degree=1)

    def cv(theta):
        bandwidth = jnp.exp(theta)[None]
        return jnp.mean(loo_residuals(jnp.asarray(x), jnp.asarray(y), bandwidth, model) ** 2)

    theta, step = np.log(0.01), 1e-5
    with jax.enable_x64(True):  # (as the search evaluates float64 data)
        gradient = float(jax.grad(cv)(theta))
        difference = (float(cv(theta + step)) - float(cv(theta - step))) / (2 * step)
    assert gradient == pytest.approx(difference, rel=1e-7)
