"""The code's import graph has no cycles, its packages keep their layers, and function-level imports
say why they are there."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("opttree", "viz", "ui")


def modules() -> dict[str, Path]:
    out = {"app": ROOT / "app.py"}
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


# The layers, bottom first (docs/architecture.md draws them). A module may import its own package and
# any package of a lower layer, never one of its own layer or above: so packages form no cycle either.
LAYERS = (
    ("core",),                     # opttree's own modules: config, errors, paths, trace, trace_file, calibration, …
    ("opttree.trees", "opttree.nets"),
    ("opttree.decoding",),
    ("opttree.models",),
    ("opttree.drafters",),
    ("opttree.engine", "opttree.args"),
    ("opttree.serve", "opttree.bench", "opttree.train", "viz"),
    ("opttree.cli", "ui"),
    ("opttree.__main__", "app"),
)
CORE = ("opttree", "opttree.config", "opttree.errors", "opttree.paths", "opttree.trace", "opttree.trace_file",
        "opttree.calibration", "opttree.theory", "opttree.machine")


def group(module: str) -> str:
    """The package a module belongs to, as LAYERS names it."""
    parts = module.split(".")
    name = ".".join(parts[:2]) if parts[0] == "opttree" else parts[0]
    return "core" if name in CORE or name.startswith("opttree.theory") else name


def layer_of(name: str) -> int:
    found = [i for i, names in enumerate(LAYERS) if name in names]
    assert found, f"package {name} has no layer: add it to LAYERS (and docs/architecture.md)"
    return found[0]


def test_every_import_points_down_a_layer():
    mods = modules()
    wrong = []
    for name, path in mods.items():
        src = group(name)
        for node in ast.walk(ast.parse(path.read_text())):
            for dst in {group(d) for d in imported(node, mods)} - {src}:
                if layer_of(dst) >= layer_of(src):
                    wrong.append(f"{path.relative_to(ROOT)}:{node.lineno} imports {dst} (layer {layer_of(dst)}) "
                                 f"from {src} (layer {layer_of(src)})")
    assert not wrong, "imports that point up or sideways:\n" + "\n".join(sorted(wrong))


def test_the_layer_check_catches_an_upward_import():
    assert layer_of(group("opttree.trees.opt_tree")) < layer_of(group("opttree.drafters.base"))
    assert group("opttree.theory.rows") == group("opttree.config") == "core"
    assert layer_of(group("viz.tree_figure")) == layer_of(group("opttree.serve.service"))


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
