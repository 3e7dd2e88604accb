"""Ways to compute the pooling state: each returns the same ``PoolingState``.

- :mod:`.dense` — one block holding every key; also gives the weight matrix.
- :mod:`.stream` — key blocks merged in a ``lax.scan``; memory ``O(block)``.

Both take a *block function* ``(query_rows, query_ids, key_rows, key_ids,
value_rows) -> PoolingState``, so kernel pooling, local-linear moments and
leave-one-out masks all run on the same two engines.
"""

from .dense import BlockFunction, dense_state, dense_weights, normalise
from .stream import stream_state

__all__ = ["BlockFunction", "dense_state", "dense_weights", "normalise", "stream_state"]
