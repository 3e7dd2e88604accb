"""The ``ctypes`` declarations against the C sources: every exported function of
``native.c`` and ``expansions.c`` is declared, with as many arguments as it takes, and
returns a status exactly where its C says ``int``."""

from __future__ import annotations

import re
from pathlib import Path

from attnpool.methods.native_signatures import RETURNS_STATUS, SIGNATURES

SOURCES = Path(__file__).resolve().parents[1] / "src" / "attnpool" / "methods"
EXPORTED = re.compile(r"^EXPORT (int|void) (\w+)\(([^)]*)\)", re.MULTILINE)
#: native.c's functions are named per variant by these macros (meson.build)
VARIANT_NAMES = {
    "STATE_NAME": "gaussian_state",
    "MOMENTS_NAME": "gaussian_moments",
    "POLYNOMIAL_NAME": "gaussian_polynomial",
}


def _exported() -> dict[str, tuple[str, int]]:
    found = {}
    for source in ("native.c", "expansions.c"):
        text = (SOURCES / source).read_text()
        for kind, name, parameters in EXPORTED.findall(text):
            name = VARIANT_NAMES.get(name, name)
            found[name] = (kind, len([p for p in parameters.split(",") if p.strip()]))
    return found


def test_every_exported_function_is_declared_with_its_arguments_and_result():
    exported = _exported()
    assert set(exported) == set(SIGNATURES)
    for name, (kind, count) in exported.items():
        assert len(SIGNATURES[name]) == count, name
        assert (name in RETURNS_STATUS) == (kind == "int"), name
