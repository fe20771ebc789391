"""The package's folders are layers: each imports only from layers below it, and no module
imports itself back through others; no function is longer than docs/architecture.md allows.
Checked on the source with `ast`, lazy imports included."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "accelbench"

# Lowest first. A module may import from its own layer and from any layer below.
LAYERS = [
    "errors",
    "core",
    "store",
    "devices",
    "workloads",
    "analysis",
    "levers",
    "exporters",
    "backends",
    "modes",
    "engine",
    "workflows",
    "render",
    "cli",
]
TOP = len(LAYERS)  # the public API (accelbench/__init__.py) and __main__ sit above everything
MAX_FUNCTION_LINES = 50  # about a screen; docs/architecture.md says so


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    """Every accelbench module `path` imports, at the top or inside a function."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("accelbench")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            elif node.module and node.module.startswith("accelbench"):
                target = node.module
            else:
                continue
            # `from . import x` imports the module x when there is one, not its package
            modules = {f"{target}.{a.name}" for a in node.names}
            modules = {m for m in modules if _is_module(m)}
            found |= modules if len(modules) == len(node.names) else {target, *modules}
    found.discard(name)
    return found


def _is_module(name: str) -> bool:
    path = PACKAGE.parent.joinpath(*name.split("."))
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


def _layer(module: str) -> int:
    parts = module.split(".")
    if len(parts) == 1 or parts[1] == "__main__":
        return TOP
    return LAYERS.index(parts[1])


def test_every_import_of_the_package_names_a_module_or_package_that_exists():
    # mypy is told to ignore missing imports (for optional packages), so it would not notice
    missing = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for target in _imports(path):
            if not _is_module(target):
                missing.append(f"{_module_name(path)} imports {target}")
    assert not missing, "\n".join(missing)


def _graph() -> dict[str, set[str]]:
    graph = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        graph[_module_name(path)] = {m for m in _imports(path) if _is_module(m)}
    return graph


def test_every_folder_is_a_known_layer():
    tops = {p.stem if p.is_file() else p.name for p in PACKAGE.iterdir()}
    tops -= {"__init__", "__main__", "__pycache__"}
    assert tops <= set(LAYERS), f"not in a layer: {sorted(tops - set(LAYERS))}"


def test_imports_point_down():
    upward = [
        f"{module} ({LAYERS[_layer(module)] if _layer(module) < TOP else 'top'}) imports "
        f"{target} ({LAYERS[_layer(target)] if _layer(target) < TOP else 'top'})"
        for module, targets in _graph().items()
        for target in sorted(targets)
        if _layer(target) > _layer(module)
    ]
    assert not upward, "imports from a higher layer:\n" + "\n".join(upward)


def test_no_import_cycles():
    graph = _graph()
    cycles = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(graph.get(module, ())):
            # a package's __init__ importing its own submodules is how packages re-export
            if target.startswith(module + "."):
                continue
            if state.get(target) == 1:
                cycles.append(" -> ".join([*path[path.index(target) :], target]))
            elif target not in state:
                visit(target, [*path, target])
        state[module] = 2

    for module in graph:
        if module not in state:
            visit(module, [module])
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


@pytest.mark.parametrize("layer", ["core", "store"])
def test_lowest_layers_do_not_import_torch(layer):
    for path in (PACKAGE / layer).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names = [node.module]
            assert not any(n.split(".")[0] == "torch" for n in names), f"{path} imports torch"


def test_no_function_is_longer_than_the_limit():
    long = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1  # from `def`, decorators left out
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{_module_name(path)}.{node.name}: {lines} lines")
    assert not long, f"over {MAX_FUNCTION_LINES} lines:\n" + "\n".join(long)
