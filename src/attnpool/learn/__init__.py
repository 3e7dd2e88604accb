"""Learned attention: from a chosen kernel to a learned one, differentiably.

Attention pooling ``Σ_i α(q, k_i; θ) v_i`` is differentiable in the parameters θ of
its score, so the similarity itself can be trained — a bandwidth, one bandwidth per
input (automatic relevance determination), a linear metric, a bandwidth that varies
with the query, or a dot-product / additive score of learned projections
(:mod:`attnpool.learn.models`). :func:`fit_attention` trains any of them with optax
by leave-one-out error (:mod:`attnpool.learn.training`).

>>> from attnpool.datasets import sine_data
>>> from attnpool.learn import fit_attention
>>> data = sine_data()
>>> fit = fit_attention("bandwidth", data.x_train, data.y_train, steps=200)
>>> round(fit.parameters()["bandwidth"], 2)
0.31
>>> fit.predict(data.x_val[:2]).shape
(2,)
"""

from .attention import learned_pool, learned_weights
from .data import Standardisation
from .models import (
    AdaptiveBandwidth,
    AdditiveScore,
    AttentionModel,
    DotProductScore,
    GlobalBandwidth,
    LinearMetric,
    PerDimensionBandwidth,
    get_model,
    model_names,
)
from .training import LOSSES, AttentionFit, fit_attention

__all__ = [
    "LOSSES",
    "AdaptiveBandwidth",
    "AdditiveScore",
    "AttentionFit",
    "AttentionModel",
    "DotProductScore",
    "GlobalBandwidth",
    "LinearMetric",
    "PerDimensionBandwidth",
    "Standardisation",
    "fit_attention",
    "get_model",
    "learned_pool",
    "learned_weights",
    "model_names",
]
