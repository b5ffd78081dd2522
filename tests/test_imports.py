"""The code's import graph has no cycles, and function-level imports say why they are there."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("opttree", "viz", "ui")


def modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for path in (ROOT / pkg).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = path
    return out


def imported(node: ast.AST, mods: dict) -> set[str]:
    """Project modules an import statement names (for `from pkg import mod`, the module itself)."""
    names = set()
    if isinstance(node, ast.Import):
        names = {a.name for a in node.names}
    elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
        names = {node.module} | {f"{node.module}.{a.name}" for a in node.names}
    return {n for n in names if n in mods}


def graph(top_level_only: bool) -> dict[str, set[str]]:
    mods = modules()
    g = {}
    for name, path in mods.items():
        tree = ast.parse(path.read_text())
        nodes = tree.body if top_level_only else list(ast.walk(tree))
        g[name] = set().union(*(imported(n, mods) for n in nodes)) - {name}
    return g


def cycle(g: dict[str, set[str]]) -> list[str] | None:
    state, stack = {}, []

    def visit(u):
        state[u] = 1
        stack.append(u)
        for v in sorted(g[u]):
            if state.get(v) == 1:
                return stack[stack.index(v):] + [v]
            if v not in state and (found := visit(v)):
                return found
        stack.pop()
        state[u] = 2
        return None

    for u in sorted(g):
        if u not in state and (found := visit(u)):
            return found
    return None


def test_no_import_cycle_among_modules():
    assert cycle(graph(top_level_only=True)) is None


def test_no_cycle_even_through_deferred_imports():
    # Package __init__ files import nothing, so `from opttree.x import y` does not drag in siblings.
    g = graph(top_level_only=False)
    assert cycle(g) is None, cycle(g)


def test_function_level_imports_give_a_reason():
    """An import inside a function needs a comment on its line or the line above (e.g. keeping torch
    out of `--help`), or it should move to the top of the module."""
    missing = []
    for path in modules().values():
        lines = path.read_text().splitlines()
        for node in ast.walk(ast.parse("\n".join(lines))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for sub in ast.walk(node):
                    if isinstance(sub, (ast.Import, ast.ImportFrom)):
                        i = sub.lineno - 1
                        block_start = i
                        while block_start > 0 and lines[block_start - 1].strip().startswith(("import ", "from ")):
                            block_start -= 1
                        context = lines[block_start:sub.end_lineno] + [lines[block_start - 1]]
                        if not any("#" in line for line in context):
                            missing.append(f"{path.relative_to(ROOT)}:{sub.lineno}")
    assert not missing, "function-level imports without a reason: " + ", ".join(sorted(set(missing)))
