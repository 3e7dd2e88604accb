"""Learnable scores beyond a fixed metric: a bandwidth that varies with the query, and
the dot-product and additive scores of learned projections."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .. import kernels as _kernels
from .._support.hints import ArrayLike
from ..sums.geometry import closeness
from .model_base import (
    AttentionModel,
    Params,
    inverse_bandwidth,
    learnable_kernel,
    sample_size,
    scott_factor,
)

__all__ = ["AdaptiveBandwidth", "AdditiveScore", "DotProductScore"]


def _mlp_init(key: Any, sizes: Any, dtype: Any) -> Any:
    """Weights ``N(0, 1/fan_in)``, zero biases; the last layer starts at zero."""
    layers = []
    keys = jax.random.split(key, len(sizes) - 1)
    for i, (fan_in, fan_out) in enumerate(itertools.pairwise(sizes)):
        last = i == len(sizes) - 2
        w = jax.random.normal(keys[i], (fan_in, fan_out), dtype) / math.sqrt(fan_in)
        layers.append({"w": jnp.zeros_like(w) if last else w, "b": jnp.zeros(fan_out, dtype)})
    return layers


def _mlp(layers: Any, x: Any) -> Any:
    for layer in layers[:-1]:
        x = jnp.tanh(x @ layer["w"] + layer["b"])
    return x @ layers[-1]["w"] + layers[-1]["b"]


@dataclass(frozen=True)
class AdaptiveBandwidth(AttentionModel):
    """A bandwidth that depends on the query: ``log h(q) = log h₀ + g(q)``.

    ``g`` is a one-hidden-layer tanh network that starts at zero (so training starts from
    the global bandwidth ``h₀``); sparse regions can learn wider windows than dense ones.

    .. math:: a(q, k) = \\log K(\\lVert q - k \\rVert / h(q))

    Parameters
    ----------
    kernel : str
        A distance kernel positive everywhere (``"gaussian"``, ``"laplacian"``).
    hidden : int
        Units of the hidden layer of ``g``.

    Examples
    --------
    >>> import attnpool
    >>> from attnpool import learn
    >>> data = attnpool.datasets.sine_data(n=80, seed=1)        # y = 2 sin x + x + noise
    >>> fit = attnpool.fit_attention(learn.AdaptiveBandwidth(), data.x_train, data.y_train,
    ...                              steps=60)
    >>> fit.parameters()["base_bandwidth"].round(3)                # h₀, in x's units
    array([0.427])

    References
    ----------
    Abramson, I. S. (1982). On bandwidth variation in kernel estimates — a square root
    law. *Annals of Statistics* 10(4), 1217–1223. Fan, J. & Gijbels, I. (1995).
    Data-driven bandwidth selection in local polynomial fitting: variable bandwidth and
    spatial adaptation. *JRSS B* 57(2), 371–394.
    """

    kernel: str = "gaussian"
    hidden: int = 16

    def __post_init__(self) -> Any:
        learnable_kernel(self.kernel)

    def init(
        self, key: jax.Array, x: jax.Array, scale: ArrayLike, rows: float | None = None
    ) -> Any:
        n, d = sample_size(x, rows)
        return {
            "log_bandwidth": jnp.full((1,), math.log(scott_factor(n, d)), x.dtype),
            "network": _mlp_init(key, (d, self.hidden, 1), x.dtype),
        }

    def log_bandwidth(self, params: Params, x: jax.Array) -> jax.Array:
        """``(n,)`` log-bandwidths at standardised inputs ``x (n, d)``."""
        return jnp.asarray(params["log_bandwidth"][0] + _mlp(params["network"], x)[:, 0])

    def embed_queries(self, params: Params, x: jax.Array) -> jax.Array:
        inverse_h = inverse_bandwidth(self.log_bandwidth(params, x))
        return jnp.concatenate([x, inverse_h[:, None]], axis=1)

    def log_weights(self, params: Params, queries: jax.Array, keys: jax.Array) -> jax.Array:
        record = _kernels.get(self.kernel)
        inverse_h = queries[:, -1:]
        return jnp.asarray(
            record.log_profile(-closeness(queries[:, :-1], keys, record) * inverse_h**2)
        )

    def readable(self, params: Params, scale: ArrayLike) -> dict[str, Any]:
        h0 = float(np.exp(params["log_bandwidth"][0]))
        return {"base_bandwidth": h0 * np.asarray(scale)}


@dataclass(frozen=True)
class DotProductScore(AttentionModel):
    """Scaled dot product of learned projections, ``a(q, k) = (W_q q)·(W_k k) / √r``.

    Parameters
    ----------
    dim : int
        ``r``, the rows of ``W_q`` and ``W_k``.

    Examples
    --------
    >>> import attnpool
    >>> from attnpool import learn
    >>> data = attnpool.datasets.sine_data(n=80, seed=1)        # y = 2 sin x + x + noise
    >>> fit = attnpool.fit_attention(learn.DotProductScore(dim=4), data.x_train,
    ...                              data.y_train, steps=60)
    >>> fit.params["query"].shape, fit.predict([2.0]).shape
    ((4, 1), (1,))

    References
    ----------
    Vaswani, A. et al. (2017). Attention is all you need. *NeurIPS* 30.
    """

    dim: int = 8

    def init(self, key: jax.Array, x: jax.Array, scale: ArrayLike) -> Params:
        d = x.shape[1]
        kq, kk = jax.random.split(key)
        return {
            "query": jax.random.normal(kq, (self.dim, d), x.dtype) / math.sqrt(d),
            "key": jax.random.normal(kk, (self.dim, d), x.dtype) / math.sqrt(d),
        }

    def embed_queries(self, params: Params, x: jax.Array) -> jax.Array:
        return jnp.asarray(x @ params["query"].T / math.sqrt(self.dim))

    def embed_keys(self, params: Params, x: jax.Array) -> jax.Array:
        return jnp.asarray(x @ params["key"].T)

    def log_weights(self, params: Params, queries: jax.Array, keys: jax.Array) -> jax.Array:
        return jnp.matmul(queries, keys.T, precision=jax.lax.Precision.HIGHEST)


@dataclass(frozen=True)
class AdditiveScore(AttentionModel):
    """Additive (Bahdanau) score, ``a(q, k) = vᵀ tanh(W_q q + W_k k + b)``.

    Parameters
    ----------
    hidden : int
        The length of ``v`` and of ``b``.

    Examples
    --------
    >>> import attnpool
    >>> from attnpool import learn
    >>> data = attnpool.datasets.sine_data(n=80, seed=1)        # y = 2 sin x + x + noise
    >>> fit = attnpool.fit_attention(learn.AdditiveScore(hidden=4), data.x_train,
    ...                              data.y_train, steps=60)
    >>> sorted(fit.params), fit.predict([2.0]).shape
    (['bias', 'key', 'out', 'query'], (1,))

    References
    ----------
    Bahdanau, D., Cho, K. & Bengio, Y. (2015). Neural machine translation by jointly
    learning to align and translate. *ICLR*.
    """

    hidden: int = 8

    @property  # a block holds a hidden vector per pair
    def pair_width(self) -> int:  # type: ignore[override]
        return self.hidden

    def init(self, key: jax.Array, x: jax.Array, scale: ArrayLike) -> Params:
        d = x.shape[1]
        kq, kk, kv = jax.random.split(key, 3)
        return {
            "query": jax.random.normal(kq, (d, self.hidden), x.dtype) / math.sqrt(d),
            "key": jax.random.normal(kk, (d, self.hidden), x.dtype) / math.sqrt(d),
            "bias": jnp.zeros(self.hidden, x.dtype),
            "out": jax.random.normal(kv, (self.hidden,), x.dtype) / math.sqrt(self.hidden),
        }

    def embed_queries(self, params: Params, x: jax.Array) -> jax.Array:
        return jnp.asarray(x @ params["query"])

    def embed_keys(self, params: Params, x: jax.Array) -> jax.Array:
        return jnp.asarray(x @ params["key"] + params["bias"])

    def log_weights(self, params: Params, queries: jax.Array, keys: jax.Array) -> jax.Array:
        return jnp.asarray(jnp.tanh(queries[:, None, :] + keys[None, :, :]) @ params["out"])
