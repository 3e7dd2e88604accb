import os

import pytest

# scikit-learn's estimator checks exercise NumPy input through the array-API code
# path only when this is set (otherwise they report themselves as skipped).
os.environ.setdefault("SCIPY_ARRAY_API", "1")


def pytest_configure(config):
    """Each pytest-xdist worker's BLAS gets its share of the cores, as scikit-learn's own
    test suite does: OpenBLAS's threads wait by spinning, so two workers with a thread
    per core each took twice as long (a worker's child processes, Dask's workers and
    the command-line tests', inherit the share through the environment)."""
    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if workers is None:
        return
    from threadpoolctl import threadpool_limits

    share = max((os.cpu_count() or 1) // int(workers), 1)
    for variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(variable, str(share))
    threadpool_limits(share)


@pytest.fixture
def without_compiled_loops(monkeypatch):
    """No compiled loops in this test, as where their library does not load: every
    caller takes the XLA form (``ATTNPOOL_INSTRUCTION_SET=none``)."""
    from attnpool.methods import compiled

    monkeypatch.setenv(compiled.VARIABLE, "none")


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs():
    """Drop JAX's compiled programs after each test file.

    XLA:CPU maps memory for every executable, and a Linux process may hold 65,530
    mappings by default: a test worker that ran the oracle properties (thousands of
    programs, one per shape, dtype and kernel) after other files crashed inside XLA's
    compiler when it ran out.
    """
    yield
    import jax

    jax.clear_caches()
