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
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == ""


def test_plotting_loads_on_first_access():
    code = "import sys, attnpool\nattnpool.plotting\nprint('matplotlib' in sys.modules)\n"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "True"


def test_public_api_is_listed():
    import attnpool

    for name in attnpool.__all__:
        assert hasattr(attnpool, name), name
