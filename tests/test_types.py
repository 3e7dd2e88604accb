"""The annotations say what comes back: NumPy in, ``numpy.ndarray`` out, so a user's
code that says so passes ``mypy --strict``; a JAX input gives the union."""

from __future__ import annotations

import textwrap

USER_CODE = textwrap.dedent(
    """
    import jax
    import jax.numpy as jnp
    import numpy as np

    from attnpool import attention_pool, local_regression, nadaraya_watson

    x = np.linspace(0, 1, 20)
    y = np.sin(x)
    q = np.array([0.5])
    fit: np.ndarray = nadaraya_watson(x, y, q, bandwidth=0.2)
    pooled, weights = attention_pool(q, x, y, return_weights=True)
    both: tuple[np.ndarray, np.ndarray] = (pooled, weights)
    line: np.ndarray = local_regression(x, y, [0.5], bandwidth=0.3, degree=1)
    listed: np.ndarray = nadaraya_watson([0.0, 1.0], [1.0, 2.0], [0.5])
    on_device: jax.Array | np.ndarray = nadaraya_watson(jnp.asarray(x), y, q)
    """
)


def test_numpy_in_is_numpy_out_for_mypy_strict(tmp_path, monkeypatch):
    from pathlib import Path

    from mypy import api

    import attnpool

    # an editable install is an import hook, which mypy does not run: it reads the
    # package where it lies (a wheel's is in site-packages, on mypy's own path)
    root = Path(attnpool.__file__).resolve().parents[1]
    if root.name not in ("site-packages", "dist-packages"):
        monkeypatch.setenv("MYPYPATH", str(root))
    (tmp_path / "user.py").write_text(USER_CODE)
    out, err, status = api.run(
        ["--strict", "--cache-dir", str(tmp_path / "cache"), str(tmp_path / "user.py")]
    )
    assert status == 0, out + err
    # and the JAX case is not claimed to be NumPy
    (tmp_path / "wrong.py").write_text(
        USER_CODE + "\nwrong: np.ndarray = nadaraya_watson(jnp.asarray(x), y, q)\n"
    )
    out, _, status = api.run(
        ["--strict", "--cache-dir", str(tmp_path / "cache"), str(tmp_path / "wrong.py")]
    )
    assert status == 1 and "Incompatible types in assignment" in out
