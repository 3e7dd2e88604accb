#!/usr/bin/env bash
# The GPU checks in one call of at most 8 minutes, on a machine with an NVIDIA GPU and
# JAX's CUDA wheels (pip install -e '.[dev,gpu]'; torch too for the anchor columns):
# the device, the pooling, methods, oracle, estimator and learning suites on the GPU,
# the pooling benchmark's GPU rows and Nadaraya–Watson CV on 1e6 points.
set -u
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-.venv/bin/python}
export JAX_PLATFORMS=cuda XLA_PYTHON_CLIENT_PREALLOCATE=false
nvidia-smi -L || true
"$PYTHON" -c "import jax; print('JAX', jax.__version__, jax.devices())"
timeout 200 "$PYTHON" -m pytest -q -p no:randomly -n 4 \
    tests/test_pallas.py tests/test_pallas_fits.py tests/test_oracle_pallas.py \
    tests/test_oracle_exact.py tests/test_method_choice.py tests/test_methods.py \
    tests/test_pooling.py tests/test_estimator.py tests/test_learn.py tests/test_autodiff.py
timeout 180 "$PYTHON" benchmarks/bench_pooling.py --device gpu --sizes 100000,1000000 \
    --dims 1,3,8 --repeats 3 \
    --only attnpool,attnpool-pallas,fused-exp,torch-sdpa-float32,torch-sdpa-bfloat16
timeout 80 "$PYTHON" benchmarks/bench_gpu_cv.py --rows 1000000
