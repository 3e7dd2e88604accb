"""The layers of docs/design.md, read from the source's import statements (``ast``).

Every relative import counts, also those inside functions (a lazy import is still a
dependency): the graph has no cycle, the engine layer imports nothing above it, and no
module imports another's underscore names.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "attnpool"

#: The engines, the methods and what they stand on: kernels, geometry, the pooling state.
ENGINE_LAYER = {"engines", "kernels", "sums"}
#: The public layers above them: pooling and regression, bandwidth selection, densities,
#: inference, Dask, learned attention, pictures and the command line.
ABOVE = {
    "bandwidth",
    "cli",
    "datasets",
    "demo",
    "density",
    "distributed",
    "inference",
    "learn",
    "plotting",
    "pooling",
    "regression",
    "report",
    "smoothers",
    "studies",
}


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _imports(name: str) -> list[tuple[str, str | None]]:
    """``(module imported, name taken from it or None)`` for each relative import."""
    path = MODULES[name]
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    package = [part for part in package if part]
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[: len(package) - (node.level - 1)]
            target = ".".join(base + ([node.module] if node.module else []))
            for alias in node.names:
                submodule = f"{target}.{alias.name}".strip(".")
                if submodule in MODULES:
                    found.append((submodule, None))
                else:
                    found.append((target, alias.name))
    return found


GRAPH = {name: {target for target, _ in _imports(name)} & set(MODULES) for name in MODULES}


def _top(name: str) -> str:
    return name.split(".")[0]


def test_the_import_graph_has_no_cycle():
    state: dict[str, str] = {}

    def visit(name: str, path: list[str]) -> None:
        state[name] = "open"
        for target in sorted(GRAPH[name]):
            if target == name or target == "":  # the package's own __init__
                continue
            if state.get(target) == "open":
                cycle = [*path[path.index(target) :], target]
                pytest.fail("import cycle: " + " → ".join(cycle))
            if target not in state:
                visit(target, [*path, target])
        state[name] = "done"

    for name in MODULES:
        if name and name not in state:
            visit(name, [name])


@pytest.mark.parametrize(
    "name", sorted(n for n in MODULES if _top(n) in ENGINE_LAYER or _top(n) == "methods")
)
def test_the_engine_layer_imports_nothing_above_it(name):
    above = sorted(target for target in GRAPH[name] if target and _top(target) in ABOVE)
    assert not above, f"{name} imports {above}"


def test_no_module_takes_another_modules_underscore_names():
    taken = [
        f"{name} takes {target}.{imported}"
        for name in MODULES
        for target, imported in _imports(name)
        if imported and imported.startswith("_") and not imported.startswith("__")
        and target != name
    ]  # fmt: skip
    assert not taken


def test_every_module_is_placed_in_a_layer():
    # a new module says where it belongs (or is a private helper, ``_name``)
    placed = ENGINE_LAYER | ABOVE | {"methods", "", "__main__"}
    unplaced = sorted(
        name for name in MODULES if _top(name) not in placed and not _top(name).startswith("_")
    )
    assert not unplaced, f"add {unplaced} to a layer in tests/test_layers.py"
