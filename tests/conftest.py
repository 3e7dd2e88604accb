import os

import pytest

# scikit-learn's estimator checks exercise NumPy input through the array-API code
# path only when this is set (otherwise they report themselves as skipped).
os.environ.setdefault("SCIPY_ARRAY_API", "1")


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
