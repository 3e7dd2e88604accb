"""Layering: `import attnpool` loads no plotting, CLI, Dask or scikit-learn code."""

import subprocess
import sys


def test_import_is_light():
    code = (
        "import sys, attnpool\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'matplotlib', 'typer', 'dask', 'distributed', 'sklearn', 'click', 'rich'})\n"
        "print(','.join(heavy))\n"
    )
    assert _printed(code) == ""


def test_plotting_loads_on_first_access():
    code = "import sys, attnpool\nattnpool.plotting\nprint('matplotlib' in sys.modules)\n"
    assert _printed(code) == "True"


def test_public_api_is_listed():
    import attnpool

    for name in attnpool.__all__:
        assert hasattr(attnpool, name), name


def test_a_small_fit_imports_neither_jax_nor_scipy_nor_scikit_learn():
    # small fits of one column run on the NumPy engine, and the estimators follow
    # scikit-learn's protocol without its bases: each of these imports costs more than
    # the whole fit
    code = (
        "import sys, numpy as np\n"
        "from attnpool import LocalLinear, NadarayaWatson, NadarayaWatsonClassifier\n"
        "x = np.linspace(0, 5, 40)[:, None]; y = np.sin(x[:, 0])\n"
        "NadarayaWatson().fit(x, y).predict(x[:5])\n"
        "LocalLinear(kernel='tricube').fit(x, y).score(x, y)\n"
        "NadarayaWatsonClassifier().fit(x, y > 0).predict(x[:5])\n"
        "print(sorted({m.split('.')[0] for m in sys.modules}\n"
        "             & {'jax', 'jaxlib', 'scipy', 'sklearn', 'pandas'}))\n"
    )
    assert _printed(code) == "[]"


def _printed(code: str) -> str:
    """What ``code`` prints in a fresh interpreter."""
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    return result.stdout.strip()


def test_small_pooling_and_searches_in_several_columns_import_no_jax():
    # the textbook's first example pools 40 points on the NumPy engine; Gaussian
    # searches of two columns run L-BFGS on the host, over the C loop's sums, without
    # SciPy (whose import alone took longer than the search)
    code = (
        "import sys, numpy as np, attnpool\n"
        "from attnpool.datasets import sine_data\n"
        "data = sine_data(n=40)\n"
        "attnpool.nadaraya_watson(data.x_train, data.y_train, data.x_val, bandwidth=0.5)\n"
        "attnpool.attention_pool(data.x_val, data.x_train, data.y_train, kernel='boxcar')\n"
        "x = np.random.default_rng(0).uniform(0, 5, (300, 2)); y = np.sin(x[:, 0]) + x[:, 1]\n"
        "attnpool.NadarayaWatson().fit(x, y).predict(x[:5])\n"
        "attnpool.LocalLinear().fit(x, y).predict(x[:5])\n"
        "heavy = {'jax', 'jaxlib', 'sklearn', 'scipy'}\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & heavy))\n"
    )
    assert _printed(code) == "[]"


def test_the_public_surface_is_one_table():
    # __all__ is the table's names; the imports type checkers read bind each of them to
    # the object the table loads (so the two cannot drift apart)
    import ast
    import importlib
    from pathlib import Path

    import attnpool

    table = attnpool._NAMES
    assert set(attnpool.__all__) == set(table) | {"datasets", "kernels", "__version__"}
    source = Path(attnpool.__file__).read_text()
    checked = next(
        node for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING"
    )  # fmt: skip
    bound = {}
    for node in checked.body:
        module = importlib.import_module("." * node.level + (node.module or ""), "attnpool")
        for alias in node.names:
            assert alias.asname == alias.name  # an explicit re-export
            bound[alias.name] = getattr(module, alias.name)
    assert set(bound) == set(table) | {"datasets", "kernels"}
    for name, value in bound.items():
        assert getattr(attnpool, name) is value, name
