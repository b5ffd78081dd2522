"""The code stays readable in small pieces: modules of at most 500 lines, functions of at most 80, a
README of at most 200 lines (details and dated figures live in docs/ and benchmarks/)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
while not (ROOT / "pyproject.toml").exists():   # the repository root, wherever this file sits under tests/
    ROOT = ROOT.parent
MAX_MODULE, MAX_FUNCTION, MAX_README = 500, 80, 200


def python_files() -> list[Path]:
    skip = {".venv", ".git", "node_modules", "build", "dist"}
    return [p for p in ROOT.rglob("*.py") if not skip & set(p.relative_to(ROOT).parts)]


def long_functions(source: str, limit: int) -> list[tuple[str, int]]:
    return [(node.name, node.end_lineno - node.lineno + 1) for node in ast.walk(ast.parse(source))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno + 1 > limit]


def test_modules_are_at_most_500_lines():
    big = {str(p.relative_to(ROOT)): n for p in python_files() if (n := len(p.read_text().splitlines())) > MAX_MODULE}
    assert not big, f"modules over {MAX_MODULE} lines: {big}"


def test_functions_are_at_most_80_lines():
    long = {f"{p.relative_to(ROOT)}:{name}": n for p in python_files()
            for name, n in long_functions(p.read_text(), MAX_FUNCTION)}
    assert not long, f"functions over {MAX_FUNCTION} lines: {long}"


def test_the_function_check_sees_a_long_function():
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION))
    assert long_functions(f"def f():\n{body}\n", MAX_FUNCTION) == [("f", MAX_FUNCTION + 1)]
    assert long_functions(f"def f():\n{body[:-len(body.splitlines()[-1]) - 1]}\n", MAX_FUNCTION) == []


def test_readme_is_at_most_200_lines():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= MAX_README, f"README.md has {len(lines)} lines; move details to docs/"
