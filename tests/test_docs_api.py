"""The documentation's API reference lists every public name users import."""

import importlib
import inspect
import re
from pathlib import Path

import pytest

import attnpool

INDEX = Path(__file__).parents[1] / "docs" / "api" / "index.rst"
# modules whose every public function and class the reference lists, under their prefix
MODULES = {
    "attnpool": "",
    "attnpool.kernels": "kernels.",
    "attnpool.plotting": "plotting.",
    "attnpool.learn": "learn.",
    "attnpool.datasets": "datasets.",
    "attnpool.studies": "studies.",
}


def listed() -> set[str]:
    return set(re.findall(r"^   ([A-Za-z_.]+)$", INDEX.read_text(), flags=re.MULTILINE))


@pytest.mark.parametrize("module_name", sorted(MODULES))
def test_every_public_function_and_class_is_in_the_reference(module_name):
    module = importlib.import_module(module_name)
    names = listed()
    missing = []
    for name in module.__all__:
        value = getattr(module, name)
        if not (inspect.isfunction(value) or inspect.isclass(value)):
            continue
        top_level = module_name != "attnpool" and name in attnpool.__all__
        if not top_level and MODULES[module_name] + name not in names:
            missing.append(name)
    assert missing == [], f"{module_name}: not in docs/api/index.rst: {missing}"


def test_every_listed_name_exists():
    for entry in listed():
        target = attnpool
        for part in entry.split("."):
            target = getattr(target, part, None) or importlib.import_module(
                f"{target.__name__}.{part}"
            )
        assert target is not None, entry
