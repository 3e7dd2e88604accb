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

from typing import Any

from .distance_models import GlobalBandwidth, LinearMetric, PerDimensionBandwidth
from .model_base import AttentionModel, Params, scott_factor
from .score_models import AdaptiveBandwidth, AdditiveScore, DotProductScore

__all__ = [
    "AdaptiveBandwidth",
    "AdditiveScore",
    "AttentionModel",
    "DotProductScore",
    "GlobalBandwidth",
    "LinearMetric",
    "Params",
    "PerDimensionBandwidth",
    "get_model",
    "model_names",
    "scott_factor",
]

_MODELS = {
    "bandwidth": GlobalBandwidth,
    "ard": PerDimensionBandwidth,
    "metric": LinearMetric,
    "adaptive": AdaptiveBandwidth,
    "dot": DotProductScore,
    "additive": AdditiveScore,
}


def model_names() -> list[str]:
    """Names accepted by :func:`get_model`.

    Returns
    -------
    list of str

    Examples
    --------
    >>> from attnpool import learn
    >>> learn.model_names()
    ['bandwidth', 'ard', 'metric', 'adaptive', 'dot', 'additive']

    References
    ----------
    Zhang, A., Lipton, Z. C., Li, M. & Smola, A. J. (2023). *Dive into Deep Learning*,
    chapters 11.2–11.3 (bandwidth, dot-product and additive scores).
    """
    return list(_MODELS)


def get_model(model: AttentionModel | str, **options: Any) -> AttentionModel:
    """A model from its name (``options`` go to its constructor) or the model itself.

    Parameters
    ----------
    model : AttentionModel or str
        A name of :func:`model_names`: ``"bandwidth"`` (:class:`GlobalBandwidth`),
        ``"ard"`` (:class:`PerDimensionBandwidth`), ``"metric"`` (:class:`LinearMetric`),
        ``"adaptive"`` (:class:`AdaptiveBandwidth`), ``"dot"`` (:class:`DotProductScore`)
        or ``"additive"`` (:class:`AdditiveScore`).
    **options
        The model's hyperparameters (a name only).

    Returns
    -------
    AttentionModel

    Examples
    --------
    >>> from attnpool import learn
    >>> learn.get_model("ard", kernel="laplacian")
    PerDimensionBandwidth(kernel='laplacian', initial=None)

    References
    ----------
    Zhang, A., Lipton, Z. C., Li, M. & Smola, A. J. (2023). *Dive into Deep Learning*,
    chapters 11.2–11.3.
    """
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
