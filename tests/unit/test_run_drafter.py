"""Which drafter made a run, as each reader of a trace shows it: the views' drafter kind and name
(viz/drafters.py), the import's status wording (ui/files.py `drafted_by`) and the Serving export's
drafter (viz/serving.py `export_drafter`). Older traces have no `drafter` field in their meta, only the
draft's name; every reader reads a training-free drafter from that name."""

from __future__ import annotations

import ast
from pathlib import Path

from ui.files import drafted_by
from viz.drafters import drafter_kind, drafter_name, has_draft_model
from viz.serving import export_drafter

ROOT = Path(__file__).resolve().parents[2]
OLD_LOOKUP = {"method": "binary", "draft": "prompt-lookup"}          # an older trace: the draft's name only
OLD_HEAD = {"method": "opt-tree", "draft": "smollm2-eagle-head.safetensors"}


def test_the_views_read_an_older_traces_drafter_from_its_draft_name():
    assert drafter_kind(OLD_LOOKUP) == "lookup" and drafter_name(OLD_LOOKUP) == "prompt lookup"
    assert drafter_kind({"draft": "Token-Recycling"}) == "recycling" and not has_draft_model(OLD_LOOKUP)
    assert drafter_kind(OLD_HEAD) == "" and drafter_name(OLD_HEAD) == "" and has_draft_model(OLD_HEAD)
    assert drafter_kind(None) == drafter_kind({}) == ""
    assert drafter_kind({"drafter": "classic", "draft": "lookup"}) == "classic"    # the field wins
    assert drafter_kind({"method": "ar", "drafter": "none"}) == "none"


def test_an_import_names_the_drafter_where_the_trace_records_or_names_one():
    assert drafted_by(OLD_HEAD) == drafted_by({}) == ""
    assert drafted_by(OLD_LOOKUP) == " (drafter: lookup)"
    assert drafted_by({"drafter": "none"}) == drafted_by({"drafter": ""}) == drafted_by({"drafter": None}) == ""
    assert drafted_by({"drafter": "lookup", "draft": "x"}) == " (drafter: lookup)"
    assert drafted_by({"drafter": "my_drafter"}) == r" (drafter: my\_drafter)"      # markdown-safe


def test_an_export_takes_the_runs_drafter_else_the_command_lines_default():
    assert export_drafter({"meta": OLD_LOOKUP}) == "lookup"      # a lookup run's tree goes to SGLang's NGRAM
    assert export_drafter({"meta": OLD_HEAD}) == "eagle"
    assert export_drafter(None) == export_drafter({}) == export_drafter({"meta": None}) == "eagle"
    assert export_drafter({"meta": {"method": "ar", "drafter": "none"}}) == "eagle"
    assert export_drafter({"meta": {"drafter": "unknown-kind"}}) == "eagle"
    for kind in ("eagle", "classic", "early-exit", "lookup", "recycling"):
        assert export_drafter({"meta": {"drafter": kind}}) == kind


def test_only_the_drafter_reader_reads_the_drafter_field_of_a_meta():
    """One reader of "which drafter made this run" (viz/drafters.py drafter_kind): the views and the page
    ask it instead of reading the meta's `drafter` field themselves."""
    readers = []
    for path in [*(ROOT / "viz").rglob("*.py"), *(ROOT / "ui").rglob("*.py")]:
        if path == ROOT / "viz" / "drafters.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
                key, owner = node.args[0] if node.args else None, node.func.value
            elif isinstance(node, ast.Subscript):
                key, owner = node.slice, node.value
            else:
                continue
            if isinstance(key, ast.Constant) and key.value == "drafter" and "meta" in ast.unparse(owner):
                readers.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert readers == []

