"""Parametric attention models: a learnable score ``a(q, k; θ)`` whose softmax over keys
gives the weights, ``α(q, k_i) = exp a(q, k_i) / Σ_j exp a(q, k_j)``.

Every model is a frozen dataclass of hyperparameters (hashable, so it can be a static
argument of :func:`jax.jit`) with pure functions of a parameter pytree:

- ``init(key, x, scale) -> params`` — ``x (m, d)`` the standardised training inputs,
  ``scale (d,)`` the standardisation (to read initial bandwidths given in input units);
- ``embed_queries(params, x) -> (n, e_q)`` and ``embed_keys(params, x) -> (m, e_k)`` —
  per-row work done once, before any block of pairs;
- ``log_weights(params, queries, keys) -> (n, b)`` — the score of one block of embedded
  queries over embedded keys, defined up to a per-query constant;
- ``readable(params, scale) -> dict`` — the parameters in the inputs' units.

Bandwidths are learned as log-bandwidths (unconstrained, and an optimiser's step is
then relative, whatever the data's units). Inputs are standardised before a model sees
them: each column by its own standard deviation, except for :class:`GlobalBandwidth`,
whose columns share one scale, so its single bandwidth is one bandwidth in input units.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from .. import kernels as _kernels
from .._typing import ArrayLike
from ..geometry import closeness

__all__ = [
    "AdaptiveBandwidth",
    "AdditiveScore",
    "AttentionModel",
    "DotProductScore",
    "GlobalBandwidth",
    "LinearMetric",
    "PerDimensionBandwidth",
    "get_model",
    "model_names",
]

Params = dict[str, Any]


def scott_factor(n: float, d: int) -> float:
    """Scott's rule on standardised data, ``n^(−1/(d + 4))``: where bandwidths start."""
    return float(float(n) ** (-1.0 / (d + 4)))


def _learnable_kernel(kernel: Any) -> _kernels.Kernel:
    record = _kernels.get(kernel)
    if record.similarity != "distance" or record.compact or record.name == "constant":
        raise ValueError(
            f"kernel: expected a distance kernel that is positive everywhere (so that every "
            f"point has neighbours when it is left out and the bandwidth has a gradient), such "
            f"as 'gaussian' or 'laplacian'; received {record.name!r}"
        )
    return record


def _size(x: Any, rows: Any) -> tuple[float, int]:
    """``(n, d)`` of the inputs ``x``, ``n`` replaced by ``rows`` if given."""
    return (x.shape[0] if rows is None else rows), x.shape[1]


def _initial_bandwidth(
    initial: Any, scale: ArrayLike, n: float, d: int, *, shared: bool
) -> jax.Array:
    """Log-bandwidths in standardised units, from ``initial`` in input units or Scott's rule."""
    if initial is None:
        return jnp.full((1,) if shared else (d,), math.log(scott_factor(n, d)))
    h = np.asarray(initial, dtype=float).reshape(-1)
    size = 1 if shared else d
    if h.shape[0] not in (1, size) or not np.all(np.isfinite(h)) or not np.all(h > 0):
        raise ValueError(
            f"initial: expected a positive number{'' if shared else f' or {d} positive numbers'}"
            f"; received {np.asarray(initial).tolist()!r}"
        )
    reference = np.asarray(scale, dtype=float)[:size]
    return jnp.log(jnp.asarray(np.broadcast_to(h, (size,)) / reference))


class AttentionModel:
    """Interface of a learnable attention model (see the module docstring)."""

    #: columns share one standardisation scale (a single bandwidth in input units)
    shared_scale: ClassVar[bool] = False
    #: values per query–key pair in a block's intermediate (sizes the streamed blocks)
    pair_width: ClassVar[int] = 1

    def init(self, key: jax.Array, x: jax.Array, scale: ArrayLike) -> Params:
        """Initial parameters for standardised inputs ``x (n, d)`` of column scales
        ``scale``. Built-in models also take ``rows``, the sample size their rules of
        thumb use (with observation weights, their sum; default ``n``)."""
        raise NotImplementedError

    def embed_queries(self, params: Params, x: jax.Array) -> jax.Array:
        return x

    def embed_keys(self, params: Params, x: jax.Array) -> jax.Array:
        return x

    def log_weights(self, params: Params, queries: jax.Array, keys: jax.Array) -> jax.Array:
        raise NotImplementedError

    def readable(self, params: Params, scale: ArrayLike) -> dict[str, Any]:
        return {name: np.asarray(value) for name, value in params.items()}


@dataclass(frozen=True)
class _ScaledDistance(AttentionModel):
    """Kernel of the distance between linearly embedded inputs (shared by three models)."""

    kernel: str = "gaussian"

    def __post_init__(self) -> Any:
        _learnable_kernel(self.kernel)

    def log_weights(self, params: Params, queries: jax.Array, keys: jax.Array) -> jax.Array:
        record = _kernels.get(self.kernel)
        return jnp.asarray(record.log_profile(-closeness(queries, keys, record)))


@dataclass(frozen=True)
class GlobalBandwidth(_ScaledDistance):
    """One learnable bandwidth ``h`` — the classic parametric Nadaraya–Watson.

    .. math:: a(q, k) = \\log K(\\lVert q - k \\rVert / h), \\qquad θ = \\log h

    (the textbook writes ``w = 1/h`` multiplying the distance). ``initial``: the starting
    bandwidth in input units (default: Scott's rule).
    """

    kernel: str = "gaussian"
    initial: float | None = None
    shared_scale: ClassVar[bool] = True

    def init(
        self, key: jax.Array, x: jax.Array, scale: ArrayLike, rows: float | None = None
    ) -> Any:
        log_h = _initial_bandwidth(self.initial, scale, *_size(x, rows), shared=True)
        return {"log_bandwidth": log_h.astype(x.dtype)}

    def embed_queries(self, params: Params, x: jax.Array) -> jax.Array:
        return x * jnp.exp(-params["log_bandwidth"])

    embed_keys = embed_queries

    def readable(self, params: Params, scale: ArrayLike) -> dict[str, Any]:
        return {"bandwidth": float(np.exp(params["log_bandwidth"][0]) * np.asarray(scale)[0])}


@dataclass(frozen=True)
class PerDimensionBandwidth(GlobalBandwidth):
    """One learnable bandwidth per input column (automatic relevance determination).

    .. math:: a(q, k) = \\log K\\Big(\\sqrt{\\textstyle\\sum_j (q_j - k_j)^2 / h_j^2}\\Big)

    An input that does not help predict grows a large ``h_j``: its differences stop
    mattering. ``initial``: a scalar or one bandwidth per column, in input units.
    """

    initial: Any = None
    shared_scale: ClassVar[bool] = False

    def __post_init__(self) -> Any:
        super().__post_init__()
        if self.initial is not None and np.ndim(self.initial):  # hashable, for jit
            object.__setattr__(self, "initial", tuple(np.ravel(self.initial).tolist()))

    def init(
        self, key: jax.Array, x: jax.Array, scale: ArrayLike, rows: float | None = None
    ) -> Any:
        log_h = _initial_bandwidth(self.initial, scale, *_size(x, rows), shared=False)
        return {"log_bandwidth": log_h.astype(x.dtype)}

    def readable(self, params: Params, scale: ArrayLike) -> dict[str, Any]:
        return {"bandwidth": np.exp(np.asarray(params["log_bandwidth"])) * np.asarray(scale)}


@dataclass(frozen=True)
class LinearMetric(_ScaledDistance):
    """A learned linear map ``W`` (``rank × d``): the kernel of ``‖W (q − k)‖``.

    A Mahalanobis metric ``(q − k)ᵀ WᵀW (q − k)`` for ``rank = d``, a learned projection
    onto ``rank`` directions below. It starts at ``I / h`` (Scott's ``h``), or at the first
    ``rank`` principal-axis rows of it.
    """

    kernel: str = "gaussian"
    rank: int | None = None

    def init(
        self, key: jax.Array, x: jax.Array, scale: ArrayLike, rows: float | None = None
    ) -> Any:
        n, d = _size(x, rows)
        rank = d if self.rank is None else self.rank
        if not 1 <= rank <= d:
            raise ValueError(f"rank: expected an integer from 1 to {d}; received {self.rank!r}")
        start = jnp.eye(d, dtype=x.dtype)[:rank] / scott_factor(n, d)
        if rank < d:  # a random orthonormal start: no column is preferred
            basis, _ = jnp.linalg.qr(jax.random.normal(key, (d, rank), x.dtype))
            start = basis.T / scott_factor(n, d)
        return {"metric": start}

    def embed_queries(self, params: Params, x: jax.Array) -> jax.Array:
        return jnp.asarray(x @ params["metric"].T)

    embed_keys = embed_queries

    def readable(self, params: Params, scale: ArrayLike) -> dict[str, Any]:
        return {"metric": np.asarray(params["metric"]) / np.asarray(scale)[None, :]}


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
    """

    kernel: str = "gaussian"
    hidden: int = 16

    def __post_init__(self) -> Any:
        _learnable_kernel(self.kernel)

    def init(
        self, key: jax.Array, x: jax.Array, scale: ArrayLike, rows: float | None = None
    ) -> Any:
        n, d = _size(x, rows)
        return {
            "log_bandwidth": jnp.full((1,), math.log(scott_factor(n, d)), x.dtype),
            "network": _mlp_init(key, (d, self.hidden, 1), x.dtype),
        }

    def log_bandwidth(self, params: Params, x: jax.Array) -> jax.Array:
        """``(n,)`` log-bandwidths at standardised inputs ``x (n, d)``."""
        return jnp.asarray(params["log_bandwidth"][0] + _mlp(params["network"], x)[:, 0])

    def embed_queries(self, params: Params, x: jax.Array) -> jax.Array:
        inverse_h = jnp.exp(-self.log_bandwidth(params, x))
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
    """Scaled dot product of learned projections, ``a(q, k) = (W_q q)·(W_k k) / √r``."""

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
    """Additive (Bahdanau) score, ``a(q, k) = vᵀ tanh(W_q q + W_k k + b)``."""

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


_MODELS = {
    "bandwidth": GlobalBandwidth,
    "ard": PerDimensionBandwidth,
    "metric": LinearMetric,
    "adaptive": AdaptiveBandwidth,
    "dot": DotProductScore,
    "additive": AdditiveScore,
}


def model_names() -> list[str]:
    """Names accepted by :func:`get_model`."""
    return list(_MODELS)


def get_model(model: AttentionModel | str, **options: Any) -> AttentionModel:
    """A model from its name (``options`` go to its constructor) or the model itself."""
    if isinstance(model, AttentionModel):
        if options:
            raise ValueError(
                f"model: options {sorted(options)} apply to a model name, not to {model!r}"
            )
        return model
    if model not in _MODELS:
        raise ValueError(
            f"model: expected an AttentionModel or one of "
            f"{', '.join(repr(name) for name in _MODELS)}; received {model!r}"
        )
    found: AttentionModel = _MODELS[model](**options)
    return found
