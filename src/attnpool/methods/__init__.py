"""Ways to compute the pooling state: each returns the same ``PoolingState``.

- :mod:`.dense` — one block holding every key; also gives the weight matrix.
- :mod:`.stream` — key blocks merged in a ``lax.scan``; memory ``O(block)``.
"""

from .dense import dense_state, dense_weights
from .stream import stream_state

__all__ = ["dense_state", "dense_weights", "stream_state"]
