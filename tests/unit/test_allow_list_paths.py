"""The allow-list reads its paths relative to its own folder (its `_comment` says so), the target's as well
as the draft's: an operator's list beside their own model folder names it by a relative path."""

import json
from types import SimpleNamespace

import pytest

from opttree.drafters.registry import KINDS
from opttree.errors import BadInput
from opttree.serve.allow_list import load_registry
from ui.files import model_of


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


def write_list(tmp_path, models) -> str:
    path = tmp_path / "m.json"
    path.write_text(json.dumps({"models": models}))
    return str(path)


def test_each_target_has_one_public_name_decided_by_the_list(tmp_path):
    """A folder is shown by its base name or its target_name, a hub id and the bundled id as they are, a
    draft by its file name: traces, views and exports carry these, never the server's paths."""
    (tmp_path / "mine").mkdir()
    reg = load_registry(write_list(tmp_path, [
        {"id": "own", "target": "mine", "drafter": "eagle", "draft": "/srv/drafts/head.safetensors"},
        {"id": "named", "target": "/srv/models/llama/", "target_name": "Llama (ours)", "drafter": "none"},
        {"id": "hub", "target": "org/model", "drafter": "none"},
        {"id": "bundled", "target": "smollm2-135m-instruct", "drafter": "eagle", "draft": "random"}]))
    e = reg.entries
    assert [e[i].public_target for i in e] == ["mine", "Llama (ours)", "org/model", "smollm2-135m-instruct"]
    assert [e[i].public_draft for i in ("own", "bundled", "hub")] == ["head.safetensors", "random", ""]
    assert e["named"].public_text("no config in /srv/models/llama/") == "no config in Llama (ours)"


@pytest.mark.parametrize("models, needle", [
    ([{"id": "a", "target": "/srv/a/model", "drafter": "none"},
      {"id": "b", "target": "/srv/b/model", "drafter": "none"}], "two targets as 'model'"),
    ([{"id": "a", "target": "/srv/gpt2", "drafter": "none"}, {"id": "b", "target": "gpt2", "drafter": "none"}],
     "two targets as 'gpt2'"),
    ([{"id": "a", "target": "/srv/smollm2", "drafter": "none"}], "as 'smollm2', the bundled target's name"),
    ([{"id": "a", "target": "/srv/m", "target_name": "one", "drafter": "none"},
      {"id": "b", "target": "/srv/m", "target_name": "two", "drafter": "self"}], "names one target 'one' and 'two'"),
    ([{"id": "a", "target": "org/model", "target_name": "mine", "drafter": "none"}], "names a local folder target"),
])
def test_a_public_name_that_would_mix_up_targets_is_refused(tmp_path, models, needle):
    """An imported trace finds its pair by the public names, and the bundled target is read by its own: two
    targets shown alike, a folder shown as the bundled target, or one target with two names are refused."""
    with pytest.raises(BadInput, match=needle):
        load_registry(write_list(tmp_path, models))


def test_a_model_drafter_without_a_draft_takes_the_bundled_one_and_an_import_finds_its_pair(tmp_path):
    """Failed before: such an entry's public draft was "", while its runs record the bundled file's name, so an
    imported run of it (without the page's `model` key) found no pair. A target with no draft of its own is
    refused when the list is read, not when a visitor first picks it."""
    reg = load_registry(write_list(tmp_path, [{"id": "head", "target": "smollm2-135m-instruct", "drafter": "eagle"}]))
    entry = reg.entries["head"]
    assert entry.draft == str(KINDS["eagle"].bundled_path) and entry.public_draft == KINDS["eagle"].bundled
    page = SimpleNamespace(model=SimpleNamespace(choices=reg.choices()))
    meta = {"target": "smollm2-135m-instruct", "drafter": "eagle", "draft": KINDS["eagle"].bundled}
    assert model_of(page, reg, meta) == "head"
    (tmp_path / "mine").mkdir()
    with pytest.raises(BadInput, match="needs a \"draft\""):
        load_registry(write_list(tmp_path, [{"id": "own", "target": "mine", "drafter": "classic"}]))
