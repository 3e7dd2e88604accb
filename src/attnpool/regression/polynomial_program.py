"""Local polynomial fits on the compiled engines (JAX: traceable, differentiable, on any
device), the same fit as :mod:`attnpool.regression.polynomial`'s NumPy sums.

The keys are summed in blocks (``"dense"``: one block; ``"stream"``: blocks of
``key_block``), each query's log weights shifted by their largest, in four passes over
the blocks (:mod:`.polynomial_blocks`' sums): the heaviest key (the reference), the
weighted mean offset ``μ`` from it, the weighted spread ``s`` about that, then the
moments of the monomials of ``z = (x − x_r − μ) / s`` and of ``y − y_r`` (coordinates
that keep the Gram matrix scaled whatever the bandwidth, and the light keys' terms
whatever the weights' span).
With ``tiled``, the three sums are the tiled Pallas kernel's (:mod:`attnpool.methods.pallas`:
memory ``O(n + m)``, compiled by Triton on a GPU), their features the stages of
:class:`~attnpool.methods.pallas_kernel.TileSums`.
The scaled Gram matrix is solved by ``jnp.linalg.solve`` (differentiable); a query whose
matrix is singular (eigenvalue ratio below :data:`~attnpool.regression.monomials.SINGULAR`)
is undetermined, NaN.
"""

from __future__ import annotations

import math
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp

from .._support.shapes import query_bucket
from ..kernels.edges import pair_log_weights
from ..kernels.record import Kernel
from .monomials import SINGULAR, derivative_rows, monomials
from .polynomial_blocks import Moments

__all__ = ["Polynomial", "compiled_polynomial"]

#: Pair entries (queries × keys × monomials) formed at a time.
CHUNK_ENTRIES = 2**22


class Polynomial(NamedTuple):
    """What a compiled local polynomial fit computes, static (one program per record): the
    ``kernel``'s weights, the monomials' ``exponents`` and the derivative ``orders``."""

    kernel: Kernel
    exponents: tuple[tuple[int, ...], ...]
    orders: tuple[tuple[int, ...], ...]

    @classmethod
    def of(cls, kernel: Kernel, d: int, degree: int, orders) -> Polynomial:
        """The fit of ``degree`` in ``d`` columns."""
        exponents = tuple(tuple(alpha) for alpha in monomials(d, degree))
        return cls(kernel, exponents, tuple(tuple(order) for order in orders))


def compiled_polynomial(x, y, q, h, spec: Polynomial, *, key_block=None, tiled: bool = False):
    """``(estimates (k, len(orders), p), undetermined (k,))`` of queries ``q (k, d)``
    over keys ``x (n, d)`` with responses ``y (n, p)`` and bandwidths ``h (d,)``; keys
    in blocks of ``key_block`` (None: one block); ``tiled``: the three sums by the tiled
    Pallas kernel (compiled by Triton on a GPU, interpreted elsewhere)."""
    n, d = x.shape
    exponents, orders = spec.exponents, spec.orders
    block = n if key_block is None else min(int(key_block), n)
    blocks = -(-n // block)
    pad = blocks * block - n
    keys = jnp.concatenate([x, jnp.zeros((pad, d), x.dtype)]).reshape(blocks, block, d)
    responses = jnp.concatenate([y, jnp.zeros((pad, y.shape[1]), y.dtype)])
    responses = responses.reshape(blocks, block, y.shape[1])
    real = (jnp.arange(blocks * block) < n).reshape(blocks, block)
    rows = max(1, CHUNK_ENTRIES // max(1, block * len(exponents) ** 2))
    k = q.shape[0]
    if k == 0:
        return jnp.zeros((0, len(orders), y.shape[1]), y.dtype), jnp.zeros(0, bool)
    if tiled:  # the kernel's memory is O(n + m): every query at once
        rows = query_bucket(k)
        q = jnp.concatenate([q, jnp.broadcast_to(q[:1], (rows - k, d))])
        estimate, undetermined = _tiled_fit(x, y, keys, responses, real, q, h, spec=spec)
        return estimate[:k], undetermined[:k]
    rows = min(rows, query_bucket(k))  # chunks of one shape: one program
    q = jnp.concatenate([q, jnp.broadcast_to(q[:1], (-k % rows, d))])
    parts = [
        _fit(keys, responses, real, q[start : start + rows], h, spec=spec)
        for start in range(0, q.shape[0], rows)
    ]  # fmt: skip
    estimate = jnp.concatenate([part[0] for part in parts])[:k]
    return estimate, jnp.concatenate([part[1] for part in parts])[:k]


def _log_weights(keys, real, q, h, kernel):
    us = [(keys[None, :, j] - q[:, j, None]) / h[j] for j in range(q.shape[1])]
    return jnp.where(real[None, :], pair_log_weights(us, kernel, jnp), -jnp.inf)


def _heaviest(keys, responses, real, q, h, kernel):
    """Each query's heaviest key over the key blocks: ``(log weight, key, response)``,
    the reference (no gradient: the fit does not depend on which key it is)."""

    def step(heaviest, block):
        k, v, r = block
        log_w = _log_weights(k, r, q, h, kernel)
        index = jnp.argmax(log_w, axis=1)
        top = jnp.take_along_axis(log_w, index[:, None], axis=1)[:, 0]
        take = top > heaviest[0]
        found = (jnp.where(take, top, heaviest[0]), jnp.where(take[:, None], k[index], heaviest[1]),
                 jnp.where(take[:, None], v[index], heaviest[2]))  # fmt: skip
        return found, None

    start = (jnp.full(q.shape[0], -jnp.inf, q.dtype), jnp.zeros((q.shape[0], q.shape[1]), q.dtype),
             jnp.zeros((q.shape[0], responses.shape[2]), q.dtype))  # fmt: skip
    return jax.lax.stop_gradient(jax.lax.scan(step, start, (keys, responses, real))[0])


@partial(jax.jit, static_argnames="spec")
def _fit(keys, responses, real, q, h, *, spec: Polynomial):
    d, (kernel, exponents, orders) = q.shape[1], spec

    def scan(step, init):
        return jax.lax.scan(lambda c, b: (step(c, *b), None), init, (keys, responses, real))[0]

    p = responses.shape[2]
    top, x_ref, y_ref = _heaviest(keys, responses, real, q, h, kernel)
    shift = jnp.where(top > -jnp.inf, top, 0.0)

    def weights(k, r):
        log_w = _log_weights(k, r, q, h, kernel)
        offsets = [k[None, :, j] - x_ref[:, j, None] for j in range(d)]
        return jnp.exp(log_w - shift[:, None]), offsets

    def mean_step(sums, k, v, r):
        w, offsets = weights(k, r)
        return sums + jnp.stack([w.sum(axis=1)] + [(w * o).sum(axis=1) for o in offsets], 1)

    sums = scan(mean_step, jnp.zeros((q.shape[0], 1 + d), q.dtype))
    total = sums[:, 0]
    mean = sums[:, 1:] / _safe(total)[:, None]

    def spread_step(acc, k, v, r):
        w, offsets = weights(k, r)
        return acc + jnp.stack([(w * (o - mean[:, j, None]) ** 2).sum(axis=1)
                                for j, o in enumerate(offsets)], 1)  # fmt: skip

    spread = _spread(scan(spread_step, jnp.zeros((q.shape[0], d), q.dtype)), total)
    width = len(exponents)

    def moment_step(acc, k, v, r):
        gram, t = acc
        w, offsets = weights(k, r)
        zs = [jnp.where(w > 0, (o - mean[:, j, None]) / spread[:, j, None], 0.0)
              for j, o in enumerate(offsets)]  # fmt: skip
        one = jnp.ones_like(w)
        basis = jnp.stack([math.prod((z**a for z, a in zip(zs, alpha, strict=True)), start=one)
                           for alpha in exponents], -1)  # fmt: skip
        weighted = basis * w[:, :, None]
        gram = gram + jnp.einsum("kbi,kbj->kij", weighted, basis)
        return gram, t + jnp.einsum("kbi,kbp->kip", weighted, v[None, :, :] - y_ref[:, None, :])

    gram, t = scan(moment_step, (jnp.zeros((q.shape[0], width, width), q.dtype),
                                 jnp.zeros((q.shape[0], width, p), q.dtype)))  # fmt: skip
    return _solved(Moments(gram, t, total, mean, spread), q - x_ref, y_ref, exponents, orders)


@partial(jax.jit, static_argnames="spec")
def _tiled_fit(x, y, keys, responses, real, q, h, *, spec: Polynomial):
    """The same fit with the three sums by the tiled kernel (:mod:`attnpool.methods.pallas`)
    on unscaled rows, the reference by :func:`_heaviest` over the key blocks."""
    from ..methods.pallas import tiled_state

    kernel, exponents, orders = spec

    _, x_ref, y_ref = _heaviest(keys, responses, real, q, h, kernel)

    def sums(stage, *columns):
        return tiled_state(jnp.concatenate([q, x_ref, *columns], axis=1), x, y, h,
                           kernel=kernel, stage=stage, polynomial=exponents)  # fmt: skip

    first = sums("mean")
    mean = first.weighted_values / _safe(first.weight_sum)[:, None]
    second = sums("spread", mean)
    spread = _spread(second.weighted_values, second.weight_sum)
    third = sums("moments", mean, spread, y_ref)
    width, p = len(exponents), y.shape[1]
    gram = third.weighted_values[:, : width * width].reshape(-1, width, width)
    t = third.weighted_values[:, width * width :].reshape(-1, width, p)
    moments = Moments(gram, t, third.weight_sum, mean, spread)
    return _solved(moments, q - x_ref, y_ref, exponents, orders)


def _safe(total):
    return jnp.where(total > 0, total, 1.0)


def _spread(squares, total):
    """The weighted spread from ``Σ w (δ − μ)²`` (1 where it is 0 or not finite)."""
    spread = jnp.sqrt(squares / _safe(total)[:, None])
    return jnp.where((spread > 0) & jnp.isfinite(spread), spread, 1.0)


def _solved(moments: Moments, at_reference, y_ref, exponents, orders):
    """:func:`attnpool.regression.polynomial_blocks.solve` in JAX (``jnp.linalg.solve``,
    differentiable): ``at_reference`` is each query's offset from its reference key."""
    gram, t, total, mean, spread = moments
    width = len(exponents)
    gram, t = gram / _safe(total)[:, None, None], t / _safe(total)[:, None, None]
    finite = jnp.all(jnp.isfinite(gram), axis=(1, 2)) & jnp.all(jnp.isfinite(t), axis=(1, 2))
    gram = jnp.where(finite[:, None, None], gram, jnp.eye(width, dtype=gram.dtype))
    t = jnp.where(finite[:, None, None], t, 0.0)
    diagonal = jnp.diagonal(gram, axis1=1, axis2=2)
    scale = 1 / jnp.sqrt(jnp.maximum(diagonal, jnp.finfo(gram.dtype).tiny))
    scaled = gram * scale[:, :, None] * scale[:, None, :]
    values = jax.lax.stop_gradient(jnp.linalg.eigvalsh(scaled))
    undetermined = ~(total > 0) | ~finite | ~(values[:, 0] > SINGULAR * values[:, -1])
    safe_matrix = jnp.where(undetermined[:, None, None], jnp.eye(width, dtype=gram.dtype), scaled)
    beta = scale[:, :, None] * jnp.linalg.solve(safe_matrix, scale[:, :, None] * t)
    units = jnp.stack([jnp.prod(spread ** jnp.asarray(order), axis=1) for order in orders], 1)
    rows = derivative_rows(exponents, orders, (at_reference - mean) / spread, jnp)
    estimate = jnp.einsum("koj,kjp->kop", rows / units[:, :, None], beta)
    fit = jnp.asarray([sum(order) == 0 for order in orders])
    estimate = estimate + jnp.where(fit[None, :, None], y_ref[:, None, :], 0.0)
    return jnp.where(undetermined[:, None, None], jnp.nan, estimate), undetermined
