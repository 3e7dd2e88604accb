"""The ``ctypes`` declarations against the C sources: every exported function of
``native.c`` and ``expansions.c`` is declared, with as many arguments as it takes, and
returns a status exactly where its C says ``int``."""

from __future__ import annotations

import re
from pathlib import Path

from attnpool.methods import native
from attnpool.methods.native_signatures import RETURNS_STATUS, SIGNATURES

EXPORTED = re.compile(r"^(int|void) (\w+)\(([^)]*)\)", re.MULTILINE)


def _exported() -> dict[str, tuple[str, int]]:
    found = {}
    for source in (native.SOURCE, native.EXPANSIONS):
        text = Path(source).read_text()
        for kind, name, parameters in EXPORTED.findall(text):
            found[name] = (kind, len([p for p in parameters.split(",") if p.strip()]))
    return found


def test_every_exported_function_is_declared_with_its_arguments_and_result():
    exported = _exported()
    assert set(exported) == set(SIGNATURES)
    for name, (kind, count) in exported.items():
        assert len(SIGNATURES[name]) == count, name
        assert (name in RETURNS_STATUS) == (kind == "int"), name
