"""The engines: where the arithmetic of a pool or a local fit runs.

- :mod:`.programs` — the exact engines' jitted programs (dense, streamed key blocks or
  the fused kernel; rows padded to buckets, log-weight bounds, the underflow re-pool,
  the nearest-key limit);
- :mod:`.local_fits` — the compiled local fits (local constant and local linear
  moments on those programs, leave-one-out, the hat diagonal);
- :mod:`.numpy_engine` — small fits and pools in float64 NumPy, no program (and
  leave-one-out sums of the Gaussian on the ``native`` C loop);
- :mod:`.host_methods` — pooling by the host methods (``sparse``, ``fgt``, ``native``,
  ``binned``, ``topk``) and exact re-pooling of the rows they cannot settle.

They stand on :mod:`attnpool.methods`, the kernels, the geometry and the pooling state,
and import nothing above them (``tests/test_layers.py``).
"""
