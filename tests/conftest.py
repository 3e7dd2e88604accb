import os

import pytest

# scikit-learn's estimator checks exercise NumPy input through the array-API code
# path only when this is set (otherwise they report themselves as skipped).
os.environ.setdefault("SCIPY_ARRAY_API", "1")


@pytest.fixture
def native_cache(tmp_path, monkeypatch):
    """An empty cache of compiled ``native`` loops, as on a fresh machine: the path."""
    from attnpool.methods import build, native

    monkeypatch.setenv("ATTNPOOL_CACHE", str(tmp_path))
    build.cache_directory.cache_clear()
    native._library.cache_clear()
    native._expansion.cache_clear()
    native._expansions_library.cache_clear()
    native._expansions_loaded.clear()
    native._loaded.clear()
    native._failures.clear()
    yield tmp_path
    build.cache_directory.cache_clear()
    native._library.cache_clear()
    native._expansion.cache_clear()
    native._expansions_library.cache_clear()
    native._expansions_loaded.clear()
    native._loaded.clear()
    native._failures.clear()


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
