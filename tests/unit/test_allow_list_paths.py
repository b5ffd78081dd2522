"""The allow-list reads its paths relative to its own folder (its `_comment` says so), the target's as well
as the draft's: an operator's list beside their own model folder names it by a relative path."""

import json

from opttree.serve.allow_list import load_registry


def test_a_relative_target_folder_is_read_beside_the_list_and_ids_stay_ids(tmp_path, monkeypatch):
    """Failed before: the target "mine" reached the loader as "mine", a hub id, from whatever folder the app ran in."""
    (tmp_path / "lists").mkdir()
    (tmp_path / "lists" / "mine").mkdir()
    (tmp_path / "lists" / "mine" / "config.json").write_text("{}")
    path = tmp_path / "lists" / "m.json"
    path.write_text(json.dumps({"default": "own", "models": [
        {"id": "own", "target": "mine", "drafter": "classic", "draft": "mine"},
        {"id": "hub", "target": "org/not-here", "drafter": "none"},
        {"id": "bundled", "target": "smollm2-135m-instruct", "drafter": "none"}]}))
    monkeypatch.chdir(tmp_path)
    reg = load_registry(path)
    assert reg.entries["own"].target == str(tmp_path / "lists" / "mine") == reg.entries["own"].draft
    assert reg.entries["hub"].target == "org/not-here" and reg.entries["bundled"].target == "smollm2-135m-instruct"
