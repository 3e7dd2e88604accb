"""Ways to pool. ``attention_pool(..., method=...)`` chooses among them
(:mod:`.choice` holds the names, the options and the ``"auto"`` rules).

Exact, traceable (``jit``/``grad``/``vmap``), each returning a ``PoolingState``:

- :mod:`.dense` — one block holding every key; also gives the weight matrix.
- :mod:`.stream` — key blocks merged in a ``lax.scan``; memory ``O(block)``.
- :mod:`.fused` — a block function through ``jax.nn.dot_product_attention``
  (flash attention on GPUs) for ``gaussian`` and ``dot``.
- :mod:`.pallas` — a tiled kernel written in Pallas (:mod:`.pallas_kernel`; Triton on
  GPUs, Pallas' interpreter elsewhere): each query tile keeps its rows' log-domain state
  while key tiles pass; pooling, leave-one-out and local linear's moments; a custom VJP.

The engines take a *block function* ``(query_rows, query_ids, key_rows, key_ids,
value_rows) -> PoolingState``, so kernel pooling, local-linear moments,
leave-one-out masks and the fused kernel all run on the same two engines.

On concrete arrays (NumPy/SciPy on the host), returning kernel sums:

- :mod:`.sparse` — compact kernels, only keys inside the support; exact.
- :mod:`.fgt` — ``fgt``: the Gaussian in 1-D by Taylor expansions over boxes; exact.
- :mod:`.native` — the Gaussian by a compiled C loop (distances, exponentials and sums
  in one pass, every core); exact.
- :mod:`.binned` — ``d ≤ 2``, linear binning and FFT convolution; a stated tolerance.
- :mod:`.topk` — each query's ``k`` nearest keys; a bound on the weight left out.
- :mod:`.tree` — a k-d tree's boxes taken whole where their weights are bounded closely
  enough; each weight sum within ``rtol · s + atol``.
"""

import importlib

__all__ = ["BlockFunction", "dense_state", "dense_weights", "normalise", "stream_state"]

_HOMES = {name: "dense" for name in __all__} | {"stream_state": "stream"}


def __getattr__(name: str):
    # the traceable engines import JAX, which a host method such as native does not need
    if name in _HOMES:
        return getattr(importlib.import_module(f".{_HOMES[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
