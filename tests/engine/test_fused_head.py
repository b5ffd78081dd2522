"""The fused head (EAGLE-3's features): a feature head that also reads a low and a middle layer of the
target. Its greedy and sampled output is the target's (the shared checks in test_greedy_exact,
test_sampling_lossless and test_length_control run it as "fused"); here: which layers it reads and
that decoding hands it exactly those rows, that a zero fusion map is the plain head it started from,
that its data (generated or filled in later) carries the same rows, and that it saves and loads."""

from __future__ import annotations

import pytest
import torch
from reference import reference
from tiny import tiny_llama, tiny_pair

from opttree.config import DecodeConfig
from opttree.drafters.registry import make_drafter
from opttree.engine.speculative import run
from opttree.errors import ModelLoadError
from opttree.nets.feature_head import FeatureHead, fused_layers, head_config_from_target
from opttree.train import data as D
from opttree.train.generate import fill_layer_feats, generate_batch

PROMPT = [3, 5, 7, 11, 13, 2]


def test_the_layers_a_fused_head_reads():
    assert fused_layers(30) == (2, 15)     # the bundled SmolLM2-135M
    assert fused_layers(32) == (2, 16)     # EAGLE-3's low and middle layers of an 8B Llama
    assert fused_layers(4) == (1, 2) and fused_layers(2) == (0, 1)   # small targets: two distinct layers
    pair = tiny_pair("fused", layers=4)
    assert make_drafter(pair, DecodeConfig()).feature_layers == (1, 2, -1)
    assert make_drafter(tiny_pair("eagle"), DecodeConfig()).feature_layers == (-1,)


def test_decoding_hands_the_head_the_low_middle_and_last_states_of_every_committed_token():
    """Prefill rows and the rows of accepted tree nodes (picked out of the verification forward) are
    the target's own hidden states at those layers, side by side, position after position."""
    pair = tiny_pair("fused", layers=4, eos=9, vocab=16)   # a small vocabulary: a wide tree holds the target's pick
    head = pair.draft_model
    seen = []
    original = head.input_features

    def recording(x):
        seen.append(x.clone())
        return original(x)

    head.input_features = recording
    cfg = DecodeConfig(method="opt-tree", nodes=40, max_depth=3, threshold=0.0, max_new_tokens=24)
    run(pair, "", cfg, prompt_ids=PROMPT)   # the first run also times the draft on made-up prefixes
    seen.clear()
    trace = run(pair, "", cfg, prompt_ids=PROMPT)
    assert trace["output_ids"] == reference(pair.target, PROMPT, 24)
    assert sum(s["accept_length"] for s in trace["steps"]) > 0, "no tree node accepted: rows from verification untested"
    got = torch.cat(seen)
    ids = torch.tensor([PROMPT + trace["output_ids"]])
    states = pair.target(input_ids=ids, output_hidden_states=True).hidden_states
    want = torch.cat([states[1][0], states[2][0], states[-1][0]], -1)[: got.shape[0]]
    assert got.shape[-1] == 3 * head.config["hidden_size"] and got.shape[0] >= len(PROMPT) + 10
    torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)


def _steps(trace):
    return [(s["tokens"], s["parents"], [round(q, 5) for q in s["p_hat"]]) for s in trace["steps"]]


def test_a_zero_fusion_map_is_the_plain_head_it_starts_from():
    """Warm-starting a fused head from a plain one changes nothing until training moves the map; a
    map that is not zero changes the trees, never the output."""
    pair = tiny_pair("eagle", layers=4, eos=9)
    cfg = DecodeConfig(method="opt-tree", nodes=16, max_depth=4, max_new_tokens=24)
    plain = run(pair, "", cfg, prompt_ids=PROMPT)
    fused = FeatureHead({**pair.draft_model.config, "fused_layers": [1, 2]})
    missing, unexpected = fused.load_state_dict(pair.draft_model.state_dict(), strict=False)
    assert sorted(missing) == ["fuse.weight", "fused_norms.0.weight", "fused_norms.1.weight"] and not unexpected
    pair.draft_model = fused.eval().requires_grad_(False)
    same = run(pair, "", cfg, prompt_ids=PROMPT)
    assert _steps(same) == _steps(plain)
    torch.nn.init.normal_(fused.fuse.weight, std=0.3)
    moved = run(pair, "", cfg, prompt_ids=PROMPT)
    assert _steps(moved) != _steps(plain)
    assert moved["output_ids"] == plain["output_ids"] == reference(pair.target, PROMPT, 24)


def test_generated_and_filled_in_layer_features_are_the_same_rows(tmp_path):
    """Data generated with the lower layers' states, and old data given them later by one teacher-forced
    forward (python -m opttree.train.generate --layer-feats fills shards that lack them) hold the same rows."""
    model = tiny_llama(seed=3, vocab=64, layers=4)
    prompts = [[1, 2, 3], [4, 5, 6, 7, 8], [9, 10], [11, 12, 13, 14], [15, 16], [17, 18, 19]]
    seqs = generate_batch(model, prompts, max_new=12, topk=4, eos={5}, layers=(1, 2))
    for s in seqs:
        assert s["layer_feats"].shape == (s["ids"].numel() - 1, 2, 32) and s["feat_layers"].tolist() == [1, 2]
    old = [{k: v for k, v in s.items() if k not in ("layer_feats", "feat_layers")} for s in seqs]
    torch.save(old, tmp_path / "shard_00000.pt")
    assert fill_layer_feats(model, tmp_path, (1, 2)) == 1
    assert fill_layer_feats(model, tmp_path, (1, 2)) == 0      # done: nothing left to fill
    filled = torch.load(tmp_path / "shard_00000.pt", weights_only=True)
    for g, f in zip(seqs, filled):
        torch.testing.assert_close(f["layer_feats"].float(), g["layer_feats"].float(), atol=2e-3, rtol=2e-3)
    # The fused head's training rows: lower layers then the last, as decoding hands them.
    D.fuse_layer_feats(filled, (1, 2))
    s = filled[0]
    assert "layer_feats" not in s and s["feats"].shape == (s["ids"].numel() - 1, 3 * 32)
    torch.testing.assert_close(s["feats"][:, -32:], seqs[0]["feats"])
    torch.testing.assert_close(s["feats"][:, 32:64], seqs[0]["layer_feats"][:, 1])
    with pytest.raises(SystemExit, match="opttree.train.generate --layer-feats"):
        D.fuse_layer_feats(old, (1, 2))


def test_a_fused_head_saves_and_loads(tmp_path):
    from opttree.models.draft_assets import load_feature_head
    from opttree.train.common import export_fp16

    pair = tiny_pair("fused", layers=4)
    head = pair.draft_model
    export_fp16(tmp_path / "fused.safetensors", head.state_dict(), head.config)
    loaded = load_feature_head(str(tmp_path / "fused.safetensors"), pair.target)
    assert loaded.feature_layers == (1, 2, -1)
    x = torch.randn(5, 3 * 32)
    torch.testing.assert_close(loaded.input_features(x), head.input_features(x), atol=2e-2, rtol=2e-2)
    # A target too shallow for the layers the head reads is refused with a clear message.
    with pytest.raises(ModelLoadError, match="reads the target's layers"):
        load_feature_head(str(tmp_path / "fused.safetensors"), tiny_llama(layers=1))


def test_training_a_fused_head_warm_started_from_a_plain_one_starts_from_its_predictions(tmp_path):
    """The training path (init_from, the fused rows of fuse_layer_feats, the unrolled training-time
    test) gives a warm-started fused head the plain head's predictions at every depth, and the
    loss reaches the fusion map, so training can move it."""
    import copy

    from opttree.train.common import export_fp16
    from opttree.train.head import head_losses, unrolled
    from opttree.train.loop import init_from

    model = tiny_llama(seed=3, vocab=64, layers=4)
    prompts = [[1, 2, 3], [4, 5, 6, 7, 8], [9, 10], [11, 12, 13, 14]]
    seqs = generate_batch(model, prompts, max_new=10, topk=4, eos=set(), layers=(1, 2))
    torch.manual_seed(0)
    cfg = head_config_from_target(model.config)
    trained = FeatureHead(cfg)
    export_fp16(tmp_path / "plain.safetensors", trained.state_dict(), cfg)
    plain, fused = FeatureHead(cfg), FeatureHead({**cfg, "fused_layers": [1, 2]})
    init_from(plain, tmp_path / "plain.safetensors")
    init_from(fused, tmp_path / "plain.safetensors")
    rows = copy.deepcopy(seqs)
    D.fuse_layer_feats(rows, (1, 2))
    embed = model.get_input_embeddings()
    outs_plain = unrolled(plain, embed, D.collate([{**s, "layer_feats": None} for s in seqs]), 3)
    outs_fused = unrolled(fused, embed, D.collate(rows), 3)
    for a, b in zip(outs_plain, outs_fused):
        torch.testing.assert_close(a, b)
    loss, _ = head_losses(fused, model.lm_head.weight, None, outs_fused, D.collate(rows), [1.0, 0.7, 0.5], 1.0, 0.2)
    loss.backward()
    assert fused.fuse.weight.grad is not None and float(fused.fuse.weight.grad.abs().sum()) > 0


def test_a_draft_file_of_another_shape_gets_its_own_cost_curve(tmp_path):
    """Machines cache their measured cost curves by draft path; a file retrained into another shape (a
    plain head replaced by a fused one) is a new key, so its curve is measured again, not reused."""
    from opttree.engine.cost import cache_key, cache_path
    from opttree.train.common import export_fp16

    pair = tiny_pair("fused", layers=4)
    path = tmp_path / "head.safetensors"
    plain = FeatureHead(head_config_from_target(pair.target.config))
    export_fp16(path, plain.state_dict(), plain.config)
    pair.draft_name = str(path)
    before = cache_key(pair)
    export_fp16(path, pair.draft_model.state_dict(), pair.draft_model.config)
    after = cache_key(pair)
    assert after["draft"] == before["draft"] and after["draft_bytes"] > before["draft_bytes"]
    assert cache_path(after) != cache_path(before)


def test_a_cpu_with_another_instruction_set_gets_its_own_cost_curve(monkeypatch):
    """A VM moved to another host keeps its CPU's model name ("AMD EPYC") but may lose AVX-512, and the
    matrix kernels' speed with it: the instruction set is part of the key, so that curve is measured
    again instead of read from the cache."""
    from opttree.engine import cost

    cpuinfo = "processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: fpu sse2 avx avx2 fma{}\n"
    assert cost.cpu_isa(cpuinfo.format("")) == "avx2"
    assert cost.cpu_isa(cpuinfo.format(" avx512f avx512bw")) == "avx512"
    assert cost.cpu_isa(cpuinfo.format(" avx512f amx_tile")) == "amx"
    assert cost.cpu_isa("processor\t: 0\nFeatures\t: fp asimd\n") == "base"
    pair = tiny_pair("eagle")
    monkeypatch.setattr(cost, "cpu_isa", lambda: "avx512")
    before = cost.cache_key(pair)
    monkeypatch.setattr(cost, "cpu_isa", lambda: "avx2")
    after = cost.cache_key(pair)
    assert before["device_name"] == after["device_name"] and cost.cache_path(after) != cost.cache_path(before)
