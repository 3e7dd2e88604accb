"""Bandwidth selection criteria as functions of the search variables, and their minimiser.

The search variables ``θ`` are log-bandwidths for continuous columns and logits of
``λ / λ_max`` for categorical ones. :func:`criterion` is leave-one-out CV or AICc at one
bandwidth (traceable; ``inf`` where undefined); :func:`objective`,
:func:`grid_objectives` and :func:`objective_and_gradient` are its jitted forms of
``θ``; :func:`refine` is L-BFGS-B on the host driven by them. Padded rows (see
:mod:`attnpool._support.shapes`) are left out of every criterion through ``count``.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..engines.local_fits import hat_diagonal, loo_residuals
from ..sums.local_model import LocalModel
from .search import GRID, bandwidth_of, best_candidate, categorical_upper, minimize_lbfgs, to_theta

__all__ = [
    "GRID",
    "Criterion",
    "bandwidth_of",
    "best_candidate",
    "binned_loo_residuals",
    "criterion",
    "curve_objectives",
    "grid_objectives",
    "objective",
    "objective_and_gradient",
    "refine",
    "to_bandwidth",
    "to_theta",
]


def to_bandwidth(theta, model: LocalModel):
    cont, cat = list(model.continuous), list(model.categorical)
    h = jnp.zeros(theta.shape, theta.dtype)
    if cont:
        h = h.at[jnp.array(cont)].set(jnp.exp(theta[jnp.array(cont)]))
    if cat:
        upper = jnp.asarray(categorical_upper(model), theta.dtype)
        h = h.at[jnp.array(cat)].set(upper * jax.nn.sigmoid(theta[jnp.array(cat)]))
    return h


class Criterion(NamedTuple):
    """What a compiled search minimises, one static record (one program per record):
    ``method`` (``"cv"`` or ``"aicc"``) of the ``model``'s fits, the keys summed in
    blocks of ``block_size`` (None: in one) by ``engine``
    (:func:`attnpool.engines.local_fits.local_fit`'s; ``"pallas"``: the tiled kernel)."""

    model: LocalModel
    method: str
    block_size: int | None = None
    engine: str | None = None


def criterion(x, y, bandwidth, spec: Criterion, *, binned=None, count=None, weights=None):
    """The CV or AICc objective ``spec`` names at ``bandwidth (d,)`` (traceable; ``inf`` if
    undefined).

    ``binned`` (a :class:`~attnpool.methods.binned_traced.BinnedPlan`) evaluates CV on the
    binned approximation instead.
    ``count``: rows from this one on are padding (:mod:`attnpool._support.shapes`), left out.
    ``weights (n,)``: positive observation weights — each row counts ``w_i`` times in
    the fits and in the mean of the squared residuals; leave-one-out leaves a row out
    whole, and AICc's penalty counts rows (its trace each row's whole self-influence),
    so that scaling every weight changes nothing (:mod:`attnpool.sums.observation_weights`).
    """
    real = jnp.arange(x.shape[0])[:, None] < (x.shape[0] if count is None else count)
    counts = real[:, 0].astype(x.dtype)
    if weights is not None:
        counts = counts * weights
    n = jnp.sum(counts)
    model, block_size, engine = spec.model, spec.block_size, spec.engine

    def mean(terms):  # over the real rows, as often as they count, and every column
        return jnp.sum(counts[:, None] * jnp.where(real, terms, 0.0)) / (n * terms.shape[1])

    if spec.method == "cv":
        if binned is None:
            residuals = loo_residuals(x, y, bandwidth, model, block_size=block_size,
                                      count=count, weights=weights, engine=engine)  # fmt: skip
        else:
            residuals = binned_loo_residuals(x, y, bandwidth, model, binned, count, weights)
        residuals = jnp.where(real, residuals, 0.0)
        return jnp.where(jnp.all(jnp.isfinite(residuals)), mean(residuals**2), jnp.inf)
    fit, hat = hat_diagonal(x, y, bandwidth, model, block_size=block_size, count=count,
                            weights=weights, engine=engine)  # fmt: skip
    # a row's self-influence is its whole weight's (w_i times one copy's); the penalty
    # counts rows, not Σ w: else weights (or repeated rows) let interpolation, tr H = the
    # rows, pass for n − 2 free of it, and AICc fell without end as h → 0
    trace = jnp.sum(counts * jnp.where(real[:, 0], hat, 0.0))
    rows = jnp.sum(real[:, 0].astype(x.dtype))
    sigma2 = mean((y - fit) ** 2)
    denominator = 1 - (trace + 2) / rows
    value = jnp.log(sigma2) + (1 + trace / rows) / denominator
    return jnp.where((denominator > 0) & jnp.isfinite(value), value, jnp.inf)


# ``binned`` is a pytree whose grid origin and spacing are traced: a new data set reuses
# the program of its grid's (bucketed) size.
@partial(jax.jit, static_argnames="spec")
def objective(theta, x, y, count=None, *, spec: Criterion, binned=None, weights=None):
    """The criterion at the search variables ``θ`` (:func:`to_bandwidth`)."""
    bandwidth = to_bandwidth(theta, spec.model)
    return criterion(x, y, bandwidth, spec, binned=binned, count=count, weights=weights)


@partial(jax.jit, static_argnames="spec")
def grid_objectives(thetas, x, y, count=None, binned=None, weights=None, *, spec: Criterion):
    return jax.vmap(_of_theta(x, y, count, binned, weights, spec))(thetas)


@partial(jax.jit, static_argnames="spec")
def objective_and_gradient(theta, x, y, count=None, binned=None, weights=None, *,
                           spec: Criterion):  # fmt: skip
    return jax.value_and_grad(_of_theta(x, y, count, binned, weights, spec))(theta)


@partial(jax.jit, static_argnames="spec")
def curve_objectives(bandwidths, x, y, weights=None, *, spec: Criterion):
    """The criterion at each bandwidth ``(k, d)`` as given (not through ``θ``, whose
    logits cannot hold a categorical ``λ`` of 0 or near it)."""
    return jax.vmap(lambda h: criterion(x, y, h, spec, weights=weights))(bandwidths)


def _of_theta(x, y, count, binned, weights, spec):
    """The objective as a function of ``θ`` alone (for ``vmap`` and ``grad``)."""
    return lambda theta: objective(theta, x, y, count, spec=spec, binned=binned, weights=weights)


def refine(evaluate, theta, dtype, *, tolerance: float, maxiter: int, bounds=None):
    """L-BFGS-B on the host from ``theta``, driven by ``evaluate(θ) → (value, gradient)``."""

    def host(t):
        value, gradient = evaluate(jnp.asarray(t, dtype))
        value, gradient = float(value), np.asarray(gradient, dtype=float)
        if not (np.isfinite(value) and np.all(np.isfinite(gradient))):
            return 1e300, np.zeros_like(gradient)
        return value, gradient

    return minimize_lbfgs(host, theta, ftol=tolerance, maxiter=maxiter, bounds=bounds)


def binned_loo_residuals(x, y, bandwidth, model: LocalModel, binned, count=None, weights=None):
    """Leave-one-out residuals of a 1-D continuous fit on the binned grid of ``binned``
    (a :class:`~attnpool.methods.binned_traced.BinnedPlan`; traceable).

    ``x (n, 1)``, ``y (n, p)``; an approximation whose error falls as ``(Δ/h)²``
    (see :mod:`attnpool.methods.binned_traced`), used to search bandwidths fast. Degree 1
    bins the moments of ``x`` about the grid's centre and recentres them at each point.
    Rows from ``count`` on are padding and bin nothing. ``weights (n,)``: observation
    weights, multiplying each row's features — its own term, taken away, is then its
    whole weight's (a row left out whole). The plan's ``nearest (n, p)``: local
    constant's fit of a row with no other key within the kernel's reach on the grid — its
    nearest other row's response, the limit of its exact fit as the others' weights fall
    away; None: NaN, and the criterion undefined.
    """
    from ..methods import binned_traced

    grid, reach, nearest = binned.grid, binned.reach, binned.nearest
    h = bandwidth[0]
    centre = grid.start[0] + 0.5 * grid.spacing[0] * (grid.size[0] - 1)
    u = x[:, 0] - centre
    if model.degree == 0:
        features = jnp.concatenate([jnp.ones_like(u)[:, None], y], axis=1)
    else:
        features = jnp.concatenate(
            [jnp.stack([jnp.ones_like(u), u, u * u], axis=1), y, u[:, None] * y], axis=1
        )
    if count is not None:
        features = jnp.where(jnp.arange(x.shape[0])[:, None] < count, features, 0.0)
    if weights is not None:
        features = features * weights[:, None]
    moments = binned_traced.leave_one_out_sums(x[:, :1], features, h, model.kernel, grid, reach)
    p = y.shape[1]
    # rows without weight take their limit, the divisions made safe first (a NaN in the
    # branch not taken would still reach the gradient)
    weighed = moments[:, 0] > 0
    m0 = jnp.where(weighed, moments[:, 0], 1.0)
    if model.degree == 0:
        fit = moments[:, 1:] / m0[:, None]
    else:
        m1, m2 = moments[:, 1], moments[:, 2]
        my, mxy = moments[:, 3 : 3 + p], moments[:, 3 + p :]
        s1, s2 = m1 - u * m0, m2 - 2 * u * m1 + u * u * m0
        t1 = mxy - u[:, None] * my
        spread = m0 * s2 - s1 * s1
        ridge = 1e-12 * m0 * m0 * h * h
        slope = (m0[:, None] * t1 - s1[:, None] * my) / (spread + ridge)[:, None]
        fit = (my - slope * s1[:, None]) / m0[:, None]
    fit = jnp.where(weighed[:, None], fit, jnp.nan if nearest is None else nearest)
    return y - fit
