"""A served pair whose target is a folder of the server's (an absolute path in the allow-list) is loaded from
that folder, but its traces, the HTML export, the Serving tab's command line and the page's messages name it
by its public name (the folder's base name, or the list's `target_name`): the server's paths never reach a
visitor. An exported trace still finds its pair when it is imported, by those public names."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from tiny import save_tiny_model

from opttree.bench.compare import ONE
from opttree.config import SETTING_NAMES, DecodeConfig
from opttree.drafters.registry import load_pair
from opttree.engine import cost
from opttree.engine.speculative import new_trace
from opttree.serve.allow_list import load_registry
from opttree.serve.service import RunError, RunService
from opttree.trace_file import loads
from ui import files
from ui import serving as serving_ui
from ui.common import Page
from ui.compare import compare_job, plan_for

SETTINGS = dict(method="binary", nodes=6, max_depth=3, max_new_tokens=6)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """(service, registry, the server's root folder): an allow-list naming its target and draft by absolute
    paths under a `srv` folder, and a target folder that holds no model."""
    root = tmp_path_factory.mktemp("server") / "srv"
    target = save_tiny_model(root / "models" / "my-llama", seed=0, layers=2)
    draft = save_tiny_model(root / "drafts" / "tiny-draft", seed=1, layers=1)
    (root / "models" / "broken").mkdir()
    (root / "models" / "broken" / "config.json").write_text("{}")
    path = root / "models.json"
    path.write_text(json.dumps({"default": "mine-self", "models": [
        {"id": "mine-self", "target": target, "drafter": "self"},
        {"id": "mine-classic", "target": target, "drafter": "classic", "draft": draft},
        {"id": "broken", "target": str(root / "models" / "broken"), "target_name": "Broken model",
         "drafter": "none"}]}))
    registry = load_registry(path)
    return RunService(registry=registry, device="cpu"), registry, str(root)


def seen_texts(trace: dict, exported: str) -> dict:
    """What a visitor gets of a run: its trace JSON, the HTML page and the Serving tab's export text."""
    with open(files.export_html(trace, "log_p_hat", 0)[0], encoding="utf-8") as f:
        page = f.read()
    return {"trace JSON": exported, "HTML export": page, "Serving tab": serving_ui.on_open(trace, "run")[1]}


@pytest.mark.parametrize("model_id, draft", [("mine-self", "self"), ("mine-classic", "tiny-draft")])
def test_a_served_folder_pair_shows_no_server_path_and_its_export_finds_its_pair(served, model_id, draft):
    """Failed before: meta.target held the absolute folder, which the trace JSON, the HTML page's metrics and
    the Serving tab's `--target` (and, for the target drafting for itself, its `--classic-draft`) showed."""
    service, registry, root = served
    trace = service.run(model_id, "t1 t2 t3", SETTINGS)
    with open(files.export(trace)[0], encoding="utf-8") as f:
        exported = f.read()
    seen = seen_texts(trace, exported)
    for where, text in seen.items():
        assert root not in text, where
    assert trace["meta"]["target"] == "my-llama" and trace["meta"]["draft"] == draft
    assert "--target my-llama" in seen["Serving tab"] and "Target my-llama" in seen["HTML export"]
    # The engine keeps the real locations: they key the pair's cost curve.
    pair = service.pair_for(model_id)[0]
    key = cost.cache_key(pair)
    assert key["target"] == pair.target_name == str(Path(root) / "models" / "my-llama")
    assert key["draft"] == (str(Path(root) / "drafts" / draft) if draft != "self" else "self")
    page = SimpleNamespace(model=SimpleNamespace(choices=registry.choices()))
    meta = loads(exported.encode())["meta"]
    assert files.model_of(page, registry, meta) == model_id
    assert files.model_of(page, registry, {**meta, "target": "other-llama"}) is None


def test_compares_command_line_names_the_folder_target_by_its_public_name(served):
    """Failed before: the Compare tab's `bench` line passed the server's folder as --target."""
    service, _, root = served
    page = Page(settings={k: k for k in SETTING_NAMES})
    settings = [getattr(DecodeConfig(), k) for k in SETTING_NAMES]
    command = plan_for(page, service, "mine-classic", "Hi", [*settings, ["binary"], [], ONE, ["4"], 8])[-1]
    assert "--target my-llama" in command and root not in command


def test_a_folder_that_fails_to_load_is_named_by_its_public_name(served):
    """Failed before: the visitor's message quoted the loader's error, the server's folder in it."""
    service, _, root = served
    with pytest.raises(RunError) as err:
        service.run("broken", "t1 t2", dict(SETTINGS, method="ar"))
    assert err.value.kind == "model" and root not in err.value.message and "Broken model" in err.value.message


def test_a_command_line_pair_records_its_own_paths(tmp_path):
    """A pair loaded outside the app (the command line, on the user's own machine) keeps its real names."""
    target = save_tiny_model(tmp_path / "mine", seed=0, layers=1)
    pair = load_pair(target, drafter="none", device="cpu")
    meta = new_trace(pair, DecodeConfig(method="ar"), "", [1])["meta"]
    assert meta["target"] == target == pair.target_name


def test_a_comparison_of_a_served_folder_pair_records_no_server_path(served):
    """Failed before: the Compare job's result (its meta: target, draft) held the server's folders."""
    service, _, root = served
    prompts = [SimpleNamespace(id="p1", category="chat", prompt="t1 t2 t3")]
    job = compare_job(service, prompts, ["ar", "binary"])
    done = [u for u in service.stream_job("mine-classic", job, dict(max_new_tokens=4, max_depth=2))
            if u.state == "done"]
    result = done[0].result
    assert result["meta"]["target"] == "my-llama" and result["meta"]["draft"] == "tiny-draft"
    assert root not in json.dumps(result, default=str)


def test_an_error_in_a_run_names_the_folder_target_by_its_public_name(served):
    """The learned length predictor's card names the bundled target, so a run of another target with it is
    refused, and the visitor reads why (failed before: the message named the server's folder)."""
    service, _, root = served
    with pytest.raises(RunError) as err:
        service.run("mine-self", "t1 t2 t3", dict(SETTINGS, length_control="predictor"))
    assert "not 'my-llama'" in err.value.message and root not in err.value.message
