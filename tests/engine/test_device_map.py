"""A target spread by `device_map` decodes exactly as it does in one piece, with every drafter that reads it.

accelerate places each module of a dispatched target and hooks it: the hook moves the module's inputs to
where it computes and, for a module offloaded to CPU or disk, loads its weights for the forward only (they
wait on the meta device in between). On this CPU-only suite a device map that offloads modules to disk runs
those same hooks. The maps here offload decoder layers, and also the embedding and the LM head, so code that
places inputs by a weight's device (meta) fails here, and code that reads an offloaded weight directly drafts
from garbage (other trees than the target in one piece gives), as on a GPU machine that offloads them. A
layer on the CPU has a hook that moves nothing: that the early exit runs the target's layers through their
hooks, which move its inputs between GPUs, is checked by counting the hooks' calls.
"""

from __future__ import annotations

import pytest
import torch
from reference import reference
from tiny import save_tiny_model
from transformers import AutoModelForCausalLM

from opttree.bench.divergence import last_logits
from opttree.cli import main
from opttree.config import RANDOM_HEAD, DecodeConfig
from opttree.drafters.registry import load_pair, with_drafter
from opttree.engine import cost
from opttree.engine.speculative import run
from opttree.models.loading import ModelPair, input_device, load_tokenizer, prepare
from opttree.nets.feature_head import FeatureHead, fused_layers, head_config_from_target
from opttree.nets.placement import module_device
from opttree.trace_file import loads
from opttree.train.common import export_fp16

LAYERS = 3
PROMPT = [3, 5, 7, 11, 3, 5, 7, 11, 3, 5]   # repeats: prompt lookup and token recycling have drafts to accept
NEW = 10
CFG = DecodeConfig(method="opt-tree", nodes=10, max_depth=4, max_new_tokens=NEW)
# Module -> "cpu" or "disk", for the keys transformers' Llama takes; what is not named stays on the CPU.
ON_DISK = {
    "layer": ("model.layers.1",),
    "ends": ("model.embed_tokens", "model.layers.0", "model.layers.2", "lm_head"),
}
KINDS = ["eagle", "fused-vocab", "classic", "early-exit", "recycling", "lookup"]


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """The target's folder, a fused head with a draft vocabulary for it, and the target's own greedy output."""
    root = tmp_path_factory.mktemp("device-map")
    target = save_tiny_model(root / "target", seed=0, layers=LAYERS)
    whole = AutoModelForCausalLM.from_pretrained(target, dtype=torch.float32)
    cfg = head_config_from_target(whole.config, draft_vocab=40)
    cfg["fused_layers"] = list(fused_layers(LAYERS))
    torch.manual_seed(2)
    head = FeatureHead(cfg)
    head.vocab_ids.copy_(torch.randperm(whole.config.vocab_size)[:40])
    torch.nn.init.normal_(head.fuse.weight, std=0.2)   # lower layers' states change every draft
    export_fp16(root / "fused.safetensors", head.state_dict(), cfg)
    return {"target": target, "fused": str(root / "fused.safetensors"), "root": root,
            "ref": reference(whole, PROMPT, NEW)}


def dispatched(folders, placement: str) -> ModelPair:
    """The target loaded with a device map that puts `placement`'s modules on disk (the others on the CPU),
    made ready by the project's own `prepare`, as `load_target` pairs it."""
    names = ["model.embed_tokens", "model.rotary_emb", *(f"model.layers.{i}" for i in range(LAYERS)),
             "model.norm", "lm_head"]
    device_map = {name: "disk" if name in ON_DISK[placement] else "cpu" for name in names}
    model = AutoModelForCausalLM.from_pretrained(folders["target"], dtype=torch.float32, device_map=device_map,
                                                 offload_folder=str(folders["root"] / f"offload-{placement}"))
    model = prepare(model, torch.device("cpu"), device_map)
    for name in ON_DISK[placement]:   # really offloaded: weights on meta until their hook loads them
        assert next(model.get_submodule(name).parameters()).device.type == "meta"
    return ModelPair(model, load_tokenizer(folders["target"]), folders["target"], device=input_device(model),
                     target_spec=folders["target"])


@pytest.fixture(scope="module")
def bases(folders):
    """Each placement's target pair: `device_map="auto"` through `load_pair`, and the disk maps."""
    auto = load_pair(folders["target"], drafter="none", device="cpu", device_map="auto")
    return {"auto": auto, **{p: dispatched(folders, p) for p in ON_DISK}}


def drafted(base: ModelPair, kind: str, folders) -> ModelPair:
    if kind == "fused-vocab":
        return with_drafter(base, "eagle", folders["fused"])
    # The classic draft is the target's own folder (a copy in one piece): it drafts what the target says,
    # so steps accept deep paths and the cache is compacted past whole accepted branches.
    draft = {"eagle": RANDOM_HEAD, "early-exit": RANDOM_HEAD, "classic": folders["target"]}.get(kind)
    return with_drafter(base, kind, draft)


@pytest.mark.parametrize("placement", ["auto", *ON_DISK])
def test_ar_on_a_spread_target_is_its_greedy_output(bases, folders, placement):
    pair = bases[placement]
    assert pair.device == torch.device("cpu")   # where inputs go: never the meta device of an offloaded weight
    trace = run(pair, "", DecodeConfig(method="ar", max_new_tokens=NEW), prompt_ids=PROMPT)
    assert trace["output_ids"] == folders["ref"]


@pytest.fixture(scope="module")
def in_one_piece(folders):
    """kind -> the trace of its run on the target loaded in one piece, without a device map."""
    whole = load_pair(folders["target"], drafter="none", device="cpu")
    return {kind: run(drafted(whole, kind, folders), "", CFG, prompt_ids=PROMPT) for kind in KINDS}


def drafts_of(trace, near: bool = False) -> list[dict]:
    """Each step's tree as drafted (tokens, parents, q) and the target's p of each node; `near`: the
    probabilities as pytest.approx (to compare to)."""
    def value(key, step):
        return pytest.approx(step[key], abs=1e-5) if near and key in ("q", "p_target") else step[key]

    return [{k: value(k, s) for k in ("tokens", "parents", "q", "p_target")} for s in trace["steps"]]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("placement", ["auto", *ON_DISK])
def test_tree_decoding_on_a_spread_target_is_its_greedy_output(bases, folders, in_one_piece, placement, kind):
    """Drafting (the target's embedding, LM head, first layers), the tree's verify forward, its hidden
    states and the cache compacted to the accepted path: every committed token is the target's own, and
    each step drafts the tree it drafts on the target in one piece (a drafter fed garbage still decodes
    exactly, the verifier sees to that, but drafts other trees)."""
    trace = run(drafted(bases[placement], kind, folders), "", CFG, prompt_ids=PROMPT)
    assert trace["output_ids"] == folders["ref"]
    assert drafts_of(trace) == drafts_of(in_one_piece[kind], near=True)
    accepted = sum(s["accept_length"] for s in trace["steps"])
    if kind == "classic":   # a draft that says what the target says: deep paths accepted, the cache trimmed to them
        assert accepted >= NEW // 2, accepted


def test_cli_device_map_auto_decodes_the_greedy_output(folders, tmp_path):
    out = tmp_path / "t.json"
    assert main(["generate", "--base-model-path", folders["target"], "--device", "cpu", "--device-map", "auto",
                 "--drafter", "early-exit", "--exit-head-path", RANDOM_HEAD, "--prompt",
                 " ".join(f"t{i}" for i in PROMPT), "--no-chat", "--method", "opt-tree", "--nodes", "10",
                 "--max-new-tokens", str(NEW), "--trace", str(out)]) == 0
    assert loads(out.read_text())["output_ids"] == folders["ref"]


def test_early_exit_runs_its_layers_through_their_hooks(bases, folders, monkeypatch):
    """The early exit calls the target's first layers one by one; each goes through its hook, which is what
    moves its inputs to the GPU it sits on (here the layers on the CPU have hooks that move nothing, so a
    bypassed hook decodes the same: the count tells them apart). With the exit after layer 1, layer 0 runs
    in every draft forward and the last layer only in the target's."""
    target = bases["layer"].target
    runs = dict.fromkeys((0, LAYERS - 1), 0)
    for i in runs:
        hook = target.model.layers[i]._hf_hook
        monkeypatch.setattr(hook, "pre_forward", counted(hook.pre_forward, runs, i))
    trace = run(drafted(bases["layer"], "early-exit", folders), "", CFG, prompt_ids=PROMPT)
    assert trace["output_ids"] == folders["ref"]
    drafts = sum(max(s["depth"], default=0) for s in trace["steps"])   # at least one forward per tree layer
    assert runs[0] >= runs[LAYERS - 1] + drafts > runs[LAYERS - 1], runs


def counted(call, runs: dict, key):
    """`call`, counting its calls in runs[key]."""
    def wrapper(*args, **kwargs):
        runs[key] += 1
        return call(*args, **kwargs)

    return wrapper


def test_timing_waits_for_every_gpu_a_spread_forward_runs_on(monkeypatch):
    """Under device_map a forward starts on the inputs' GPU and ends on another: the clock read after
    `cost.sync` (the prefill's, the cost curve's) must wait for all of them. It waited for the inputs' GPU
    alone (failed before: only cuda:0 synchronised of three). CPU runs wait for nothing."""
    waited = []
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 3)
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda device=None: 1 << 30)   # the target spread over all three
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: waited.append(torch.device("cuda", device)))
    cost.sync("cuda:0")
    assert [d.index for d in waited] == [0, 1, 2]
    waited.clear()
    cost.sync("cpu")
    assert waited == []


def test_timing_leaves_alone_a_gpu_the_process_never_used(monkeypatch):
    """Waiting on a GPU creates a CUDA context there (hundreds of MB of its memory, and the time to make it
    inside the first timed forward): `cost.sync` waits on the GPUs this process holds memory on, the only
    ones its forwards can run on (failed before: it waited on all three, cuda:1 included)."""
    waited = []
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 3)
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda device=None: {0: 1 << 20, 1: 0, 2: 1 << 30}[device])
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: waited.append(device))
    cost.sync("cuda:0")
    assert waited == [0, 2]


def test_divergence_logits_of_a_target_with_an_offloaded_embedding(bases, folders):
    """The divergence tool's forward (opttree/bench/divergence.py) sends its ids where the embedding
    computes, not to its weight's device (meta while offloaded; failed before: a meta tensor has no data)."""
    whole = AutoModelForCausalLM.from_pretrained(folders["target"], dtype=torch.float32)
    ids = PROMPT + folders["ref"][:3]
    got = last_logits(bases["ends"].target, ids)
    assert torch.allclose(got, last_logits(whole, ids), atol=1e-5)


def test_where_a_module_without_weights_computes():
    """A module with no weight (an activation) computes on the CPU, one with only buffers where they are
    (failed before: StopIteration leaked out of module_device)."""
    assert module_device(torch.nn.ReLU()) == torch.device("cpu")
    holder = torch.nn.Module()
    holder.register_buffer("steps", torch.zeros(1, device="meta"))
    assert module_device(holder) == torch.device("meta")
