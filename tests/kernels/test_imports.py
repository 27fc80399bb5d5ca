"""kernels/ has no import circle: every import statement (at the top of a module or inside a function) read
from the sources, relative ones resolved. Text only: nothing is imported."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "kernels"


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """{module: the kernels modules its import statements name}."""
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = package.split(".")[:len(package.split(".")) - node.level + 1] if node.level else []
                source = ".".join(base + ([node.module] if node.module else []))
                for alias in node.names:  # `from pkg import submodule` imports the submodule
                    targets.add(f"{source}.{alias.name}" if f"{source}.{alias.name}" in modules else source)
        graph[name] = {t for t in targets if t in modules and t != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every import circle, as the path that closes it (depth-first search)."""
    found, state = [], {}

    def visit(node, path):
        state[node] = "open"
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                found.append(path[path.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    return found


def test_the_graph_sees_relative_and_function_level_imports():
    graph = import_graph()
    assert "kernels.formats" in graph["kernels.problems"]  # from .formats import ... (top level)
    assert "kernels.reference" in graph["kernels.problems"]  # from . import reference (inside a method)


def test_no_import_circle_in_kernels():
    assert cycles(import_graph()) == []


def test_formats_is_the_bottom():
    assert import_graph()["kernels.formats"] == set()
