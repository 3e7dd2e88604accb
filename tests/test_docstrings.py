"""Every name of the API reference carries numpydoc's sections: Parameters (where it takes
any), Returns (a function), Examples and References.

The names are read from the reference's own page (``docs/api/index.rst``), so a name
added there is held to the same rule; the examples themselves run as doctests.
"""

import importlib
import inspect
import re
from pathlib import Path

import pytest

API_PAGE = Path(__file__).resolve().parents[1] / "docs" / "api" / "index.rst"


def _documented_names() -> list[str]:
    text = API_PAGE.read_text(encoding="utf-8")
    blocks = re.findall(r"\.\. autosummary::\n(?:   :\S+:.*\n)*\n((?:   \S+\n)+)", text)
    return [line.strip() for block in blocks for line in block.splitlines()]


def _resolve(name: str):
    owner, _, attribute = f"attnpool.{name}".rpartition(".")
    try:
        return getattr(importlib.import_module(owner), attribute)
    except ModuleNotFoundError:
        module, _, record = owner.rpartition(".")
        return getattr(getattr(importlib.import_module(module), record), attribute)


def _sections(doc: str) -> dict[str, str]:
    found, current = {}, None
    lines = doc.splitlines()
    for line, underline in zip(lines, [*lines[1:], ""], strict=True):
        if underline and set(underline) == {"-"} and len(underline) == len(line.strip()):
            current = line.strip()
            found[current] = ""
        elif current is not None:
            found[current] += line + "\n"
    return found


def test_the_reference_lists_the_public_names():
    names = _documented_names()
    assert len(names) > 70
    assert {"attention_pool", "KernelDensity", "plotting.plot_fit", "learn.AttentionFit"} <= set(
        names
    )


def _parameters(obj) -> list[str]:
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):  # a builtin's (an exception's) signature
        return []
    return [name for name in signature.parameters if name not in ("self", "cls")]


@pytest.mark.parametrize("name", _documented_names())
def test_numpydoc_sections(name):
    obj = _resolve(name)
    sections = _sections(inspect.getdoc(obj) or "")
    assert ">>>" in sections.get("Examples", ""), f"{name}: no Examples section with code"
    assert sections.get("References", "").strip(), f"{name}: no References section"
    listed = sections.get("Parameters", "") + sections.get("Attributes", "")
    for parameter in _parameters(obj):
        assert parameter.lstrip("*") in listed, f"{name}: parameter {parameter!r} not described"
    if inspect.isfunction(obj):
        assert sections.get("Returns", "").strip(), f"{name}: no Returns section"
