"""Attention pooling, ``Σ_i α(q, k_i) v_i`` with ``α`` normalised over the keys
(:mod:`.attention`), its weights as a matrix (:mod:`.weights`), and the pool with
observation weights (:mod:`.weighted`).

Shapes: ``queries (n,) | (n, d)``, ``keys (m,) | (m, d)``, ``values (m,) | (m, p)``;
weights are ``(n_queries, n_keys)``; the output keeps the values' trailing shape.
"""

from ..methods.options import DENSE_MAX_PAIRS, Binned, TopK
from ..sums.empty_policy import EmptyNeighbourhoodWarning
from .attention import MAX_WEIGHT_ENTRIES, attention_pool
from .weights import attention_weights

__all__ = [
    "DENSE_MAX_PAIRS",
    "MAX_WEIGHT_ENTRIES",
    "Binned",
    "EmptyNeighbourhoodWarning",
    "TopK",
    "attention_pool",
    "attention_weights",
]
