"""Shapes that repeat: row counts rounded up to a few bucket sizes.

XLA compiles one program per shape, so a new number of rows, queries or training
points would otherwise cost a compilation (0.1–1 s) every time. The exact engines pad
their rows up to a bucket — eight sizes per doubling for keys and training rows, powers of
two for up to 1024 queries, at least :data:`FLOOR` — by
repeating the first row; a padded key is masked (log weight ``−inf``, never the
nearest), a padded query's result is dropped. Above :data:`MAX_ROWS` rows the
arithmetic outweighs a compilation and shapes are used as they are.
"""

from __future__ import annotations

import numpy as np

#: The smallest bucket: every problem with this many rows or fewer shares one shape.
FLOOR = 32
#: Buckets per doubling: padding adds at most 1/STEPS of the rows.
STEPS = 8
#: Largest row count that is padded.
MAX_ROWS = 2**14


def bucket(n: int, steps: int = STEPS) -> int:
    """The padded size of ``n`` rows: ``FLOOR``, a multiple of ``2^k / steps``, or ``n``."""
    if n <= FLOOR:
        return FLOOR
    if n > MAX_ROWS:
        return n
    step = max((1 << (n.bit_length() - 1)) // steps, 1)
    return -(-n // step) * step


#: Queries up to which buckets are powers of two (one query block of the streamed
#: engine); above, eight per doubling, as rows.
QUERY_POWERS_MAX = 1024


def query_bucket(n: int) -> int:
    """The padded size of ``n`` queries: a power of two up to :data:`QUERY_POWERS_MAX`
    (a query costs one row of work, a training row in a search a row and a column, so
    few programs matter more there), then as :func:`bucket` — a power of two above
    made ``n = 10⁴`` queries cost 16 384 (streamed pooling 2.5× slower)."""
    return bucket(n, steps=1 if n <= QUERY_POWERS_MAX else STEPS)


def pad_rows(array, size: int):
    """``array`` with its first row repeated at the end up to ``size`` rows.

    NumPy arrays are padded by NumPy: an eager JAX operation would compile a program
    for every shape, which is what the buckets are for.
    """
    extra = size - array.shape[0]
    if extra == 0:
        return array
    if isinstance(array, np.ndarray):
        xp = np
    else:
        import jax.numpy as xp
    return xp.concatenate([array, xp.broadcast_to(array[:1], (extra, *array.shape[1:]))])


def padded(*arrays, size: int):
    """Each array padded to ``size`` rows (see :func:`pad_rows`)."""
    return tuple(pad_rows(a, size) for a in arrays)


def unpadded(results, n: int, *, host: bool):
    """The first ``n`` rows of each result (None stays None); NumPy arrays if ``host``."""
    return tuple(None if r is None else (np.asarray(r)[:n] if host else r[:n]) for r in results)


def is_host(*arrays) -> bool:
    """Whether every array is a NumPy array (padded and cut on the host)."""
    return all(isinstance(a, np.ndarray) for a in arrays)
