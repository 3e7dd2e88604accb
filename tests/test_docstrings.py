"""Every name of the API reference carries numpydoc's Examples and References sections.

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


@pytest.mark.parametrize("name", _documented_names())
def test_examples_and_references(name):
    sections = _sections(inspect.getdoc(_resolve(name)) or "")
    assert ">>>" in sections.get("Examples", ""), f"{name}: no Examples section with code"
    assert sections.get("References", "").strip(), f"{name}: no References section"
