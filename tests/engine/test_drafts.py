"""The bundled drafts: shipped weights load and draft losslessly, the training pipeline runs end to
end on tiny data, and the eval prompt set is disjoint from the training prompts."""

from __future__ import annotations

import json

import pytest
import torch
from reference import needs_target

from opttree.config import BUNDLED_ID, DecodeConfig
from opttree.decoding.prompts import encode_prompt
from opttree.drafters.registry import KINDS
from opttree.engine.speculative import run
from opttree.models.draft_assets import card_temperature
from opttree.train.card import eval_questions
from opttree.train.prompts import build_prompts

BUNDLED_HEAD, BUNDLED_CLASSIC, BUNDLED_EXIT = (KINDS[k].bundled_path for k in ("eagle", "classic", "early-exit"))

TARGET = BUNDLED_ID
PROMPTS = ["Name three colours.", "What is 2 + 3?"]


def test_eval_set_is_mt_bench_style_and_disjoint():
    qs = eval_questions()
    assert 40 <= len(qs) <= 80
    assert len({q["question_id"] for q in qs}) == len(qs)
    cats = {q["category"] for q in qs}
    assert cats >= {"writing", "roleplay", "reasoning", "math", "coding", "extraction", "stem", "humanities"}
    train = {p.strip().lower() for p in build_prompts()}
    for q in qs:
        assert q["turns"] and all(isinstance(t, str) and t.strip() for t in q["turns"])
        for t in q["turns"]:
            assert t.strip().lower() not in train


def test_training_prompt_set_is_frozen_diverse_and_keyed_by_id():
    import hashlib

    from opttree import paths
    from opttree.train.prompts import train_prompts

    # The file is data: editing, reordering or re-generating a line would silently re-label every
    # stored shard (a shard stores its prompt's line number). New prompts are appended as a new part.
    data = paths.TRAIN_PROMPTS.read_bytes()
    assert hashlib.sha256(data).hexdigest() == "071ec97e69c3fe452bee7b2310c67e74b80864715f114f215fe909b43280ac5f"
    # Appending a part leaves every earlier line byte for byte as the earlier drafts' data was generated from.
    lines = data.splitlines(keepends=True)
    for n, digest in ((6302, "7f6d6b60abdd41a598e7d446eb60295d515bf60b5c1fa4a3128c90c18f6a558d"),    # parts 1-4
                      (7625, "6b6a81a2a4ebd7918ec69482f529352238eb081f0beff934742f3f6d396a1cf7")):   # parts 1-5
        assert hashlib.sha256(b"".join(lines[:n])).hexdigest() == digest
    prompts = train_prompts()
    texts = [p.text for p in prompts]
    assert len(texts) == 8762 and len(set(texts)) == len(texts) and all(t.strip() for t in texts)
    assert len({p.id for p in prompts}) == len(prompts)
    assert [sum(p.part == k for p in prompts) for k in (1, 2, 3, 4, 5, 6)] == [2252, 1043, 1482, 1525, 1323, 1137]
    assert [p.part for p in prompts] == sorted(p.part for p in prompts)   # parts are appended, never interleaved
    held = [p for p in prompts if p.heldout]
    assert 0.03 < len(held) / len(prompts) < 0.05 and {p.part for p in held} == {1, 2, 3, 4, 5, 6}
    assert build_prompts() == texts


def test_prompt_parts_reproduce_their_frozen_lines():
    # opttree/train/prompt_parts.py documents how parts 5 and 6 were written (templates in
    # assets/prompts/parts/): run against the lines before it, each part is reproduced exactly
    # (texts, order, held-out flags, ids).
    from opttree.train import prompt_parts

    rows = prompt_parts.frozen_rows()
    for part in (5, 6):
        made = prompt_parts.part_rows(part, [r for r in rows if r["part"] < part])
        assert made == [r for r in rows if r["part"] == part], part
    # part 6 dropped, unread, every prompt sharing a run of five words with the eval or final set
    assert not any(prompt_parts.shares_five_words(r["text"]) for r in rows if r["part"] == 6)


@pytest.fixture(scope="module")
def pairs():
    from opttree.drafters.registry import load_pair, with_drafter

    if not (BUNDLED_HEAD.exists() and BUNDLED_CLASSIC.exists() and BUNDLED_EXIT.exists()):
        pytest.skip("bundled draft weights not built")
    eagle = load_pair(TARGET, drafter="eagle", device="cpu")
    classic = load_pair(TARGET, drafter="classic", device="cpu")
    return eagle, classic, with_drafter(eagle, "early-exit")   # the early-exit head runs on the same target


def _ar(pair, prompt, n):
    ids = encode_prompt(pair.tokenizer, prompt)
    out = pair.target.generate(torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                               max_new_tokens=n, do_sample=False)
    return out[0, len(ids):].tolist()


@needs_target
def test_shipped_files_are_small_fp16_with_cards():
    from safetensors import safe_open

    for path in (BUNDLED_HEAD, BUNDLED_CLASSIC, BUNDLED_EXIT):
        assert path.exists(), path
        assert path.stat().st_size <= 25 * 1024 * 1024
        with safe_open(str(path), framework="pt") as f:
            assert "config" in (f.metadata() or {})
            for k in f.keys():
                t = f.get_tensor(k)
                assert t.dtype in (torch.float16, torch.int64), (k, t.dtype)
        card = json.loads(path.with_suffix(".json").read_text())
        # Trained: by its own run, or (a run that only re-exports, --epochs 0) by the lineage's earlier ones.
        earlier = [run.get("steps", 0) for run in card.get("lineage", {}).values() if isinstance(run, dict)]
        assert card["heldout_top1_by_depth"] and (card["steps"] > 0 or sum(earlier) > 0)
        # The loader uses the card's tree temperature, and it is the fit's best (not hand-picked).
        taus = card["tree_temperature_fit"]["tau_by_temperature"]
        assert card_temperature(str(path)) == card["tree_temperature"] == float(max(taus, key=taus.get))


@needs_target
@pytest.mark.parametrize("kind", [0, 1, 2], ids=["eagle", "classic", "early-exit"])
def test_shipped_drafts_are_lossless_and_useful(pairs, kind):
    pair = pairs[kind]
    cfg = DecodeConfig(method="opt-tree", nodes=60, threshold=0.5, max_depth=10, max_new_tokens=24)
    taus = []
    for prompt in PROMPTS:
        trace = run(pair, prompt, cfg)
        assert trace["output_ids"] == _ar(pair, prompt, 24)
        taus.append(trace["summary"]["tau"])
    assert sum(taus) / len(taus) > 1.3  # a trained draft gets more than the bonus token


@needs_target
def test_a_bench_method_can_name_another_bundled_drafter(pairs):
    """`early-exit:chain~thompson` in a bench of the eagle pair: the bundled exit head on the same target."""
    from opttree.bench.harness import MethodRunner

    runner = MethodRunner(pairs[0], DecodeConfig(method="ar", nodes=10, max_depth=4, max_new_tokens=12))
    ids = encode_prompt(pairs[0].tokenizer, PROMPTS[0])
    row, steps = runner("early-exit:chain~thompson", PROMPTS[0], ids)
    assert row["output_ids"] == _ar(pairs[0], PROMPTS[0], 12) and steps
    assert runner.pair_for("early-exit").target is pairs[0].target and runner.pair_for("eagle") is pairs[0]
    assert runner.pair_for("early-exit").drafter_kind == "early-exit"


@needs_target
def test_classic_draft_works_as_transformers_assistant(pairs):
    pair = pairs[1]
    ids = encode_prompt(pair.tokenizer, PROMPTS[0])
    x = torch.tensor([ids])
    mask = torch.ones_like(x)
    plain = pair.target.generate(x, attention_mask=mask, max_new_tokens=20, do_sample=False)
    assisted = pair.target.generate(x, attention_mask=mask, max_new_tokens=20, do_sample=False,
                                    assistant_model=pair.draft_model)
    assert assisted.tolist() == plain.tolist()


@needs_target
def test_tiny_training_run_end_to_end(tmp_path, monkeypatch):
    from opttree.drafters.registry import load_pair
    from opttree.train import __main__ as train_main
    from opttree.train.__main__ import main
    from opttree.train.common import MEASURE_DEVICE

    measured_on = []      # where the τ after training loads its pair: the card command's device, not --device

    def load_for_tau(*args, **kwargs):
        measured_on.append(kwargs.get("device"))
        return load_pair(*args, **kwargs)

    monkeypatch.setattr(train_main, "load_pair", load_for_tau)

    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("".join(json.dumps({"id": i, "prompt": p}) + "\n" for i, p in enumerate(PROMPTS * 2)))
    common = ["--data", str(tmp_path / "gen"), "--prompts", str(prompts), "--tokens", "1000",
              "--max-new", "8", "--gen-batch", "2", "--steps", "2", "--eval-every", "2",
              "--batch-tokens", "256", "--ckpt-dir", str(tmp_path / "ck"), "--tau-prompts", "0",
              "--fit-temperature", "0", "--threads", "1"]
    head = main(["--kind", "head", "--out", str(tmp_path / "head.safetensors"), "--draft-vocab", "300",
                 "--unroll", "2"] + common)
    classic = main(["--kind", "classic", "--out", str(tmp_path / "classic.safetensors"), "--layers", "1",
                    "--no-generate"] + common)
    exit_head = main(["--kind", "early-exit", "--exit-layer", "3", "--out", str(tmp_path / "exit.safetensors"),
                      "--draft-vocab", "300", "--no-generate"] + common + ["--tau-prompts", "1"])
    assert head["steps"] == 2 and classic["steps"] == 2 and exit_head["steps"] == 2
    # τ after training: measured where the card command measures, and the card says what it ran on
    tau = exit_head["tau_eval"]
    assert measured_on == [MEASURE_DEVICE] == ["cpu"]
    assert tau["n_prompts"] == 1 and tau["tau"] >= 1.0 and tau["device"] == "cpu" and tau["draft_kernel"]
    assert json.loads((tmp_path / "exit.json").read_text())["tau_eval"] == tau
    assert exit_head["exit_layer"] == 3 and len(exit_head["heldout_chain_agreement_by_depth"]) == 5
    # Train further on a fresh schedule, in bf16 autocast: the step count goes on from the checkpoint.
    more = main(["--kind", "head", "--out", str(tmp_path / "head.safetensors"), "--draft-vocab", "300",
                 "--unroll", "2", "--no-generate", "--resume", "--extend", "--bf16"] + common)
    assert more["steps"] == 4 and [h["step"] for h in more["history"]] == [0, 2, 4]
    # A fused head (EAGLE-3 features) warm-started from the plain head: its run adds the states of
    # layers 2 and 15 to the shards generated without them, then trains.
    fused = main(["--kind", "head", "--fused", "--init-from", str(tmp_path / "head.safetensors"), "--out",
                  str(tmp_path / "fused.safetensors"), "--draft-vocab", "300", "--unroll", "2"] + common)
    assert fused["config"]["fused_layers"] == [2, 15] and fused["hparams"]["fused"] and fused["steps"] == 2
    # --epochs 0: the fused head over another draft vocabulary (the tiny data has fewer distinct tokens
    # than 300, so here a narrower one), evaluated and exported, no step taken.
    other = main(["--kind", "head", "--fused", "--init-from", str(tmp_path / "fused.safetensors"), "--out",
                  str(tmp_path / "other.safetensors"), "--draft-vocab", "40", "--unroll", "2", "--no-generate"]
                 + common + ["--steps", "0", "--epochs", "0"])
    assert other["steps"] == 0 and [h["step"] for h in other["history"]] == [0] and other["draft_vocab"] == 40
    from safetensors.torch import load_file
    was, now = load_file(str(tmp_path / "fused.safetensors")), load_file(str(tmp_path / "other.safetensors"))
    assert fused["draft_vocab"] > 40 and set(now["vocab_ids"].tolist()) < set(was["vocab_ids"].tolist())
    assert all(torch.equal(v, now[k]) for k, v in was.items() if k != "vocab_ids")
    shard = torch.load(next((tmp_path / "gen").glob("shard_*.pt")), weights_only=True)[0]
    assert shard["feat_layers"].tolist() == [2, 15] and shard["layer_feats"].shape[1:] == (2, 576)
    assert (tmp_path / "head.json").exists() and (tmp_path / "classic.json").exists()
    cfg = DecodeConfig(method="opt-tree", nodes=10, max_depth=3, max_new_tokens=6)
    for kind, path in (("eagle", "head.safetensors"), ("eagle", "fused.safetensors"),
                       ("classic", "classic.safetensors"), ("early-exit", "exit.safetensors")):
        pair = load_pair(TARGET, drafter=kind, draft=str(tmp_path / path), device="cpu")
        trace = run(pair, PROMPTS[1], cfg)
        assert trace["output_ids"] == _ar(pair, PROMPTS[1], 6)


def test_init_from_keeps_learned_layers_across_draft_vocabularies(tmp_path):
    """A head retrained with another draft vocabulary starts from the shipped layers (not from noise)."""
    from opttree.nets.feature_head import FeatureHead
    from opttree.train.common import export_fp16
    from opttree.train.loop import init_from

    cfg = {"hidden_size": 32, "intermediate_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
           "head_dim": 8, "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "max_position_embeddings": 128,
           "num_hidden_layers": 1, "draft_vocab": 50}
    torch.manual_seed(0)
    old = FeatureHead(cfg)
    old.vocab_ids.copy_(torch.arange(50))
    export_fp16(tmp_path / "old.safetensors", old.state_dict(), cfg)
    new = FeatureHead({**cfg, "draft_vocab": 20})
    new.vocab_ids.copy_(torch.arange(20) * 2)
    assert not torch.allclose(new.fc.weight, old.fc.weight.half().float())
    init_from(new, tmp_path / "old.safetensors")
    for name, t in new.state_dict().items():
        if name == "vocab_ids":
            assert t.tolist() == (torch.arange(20) * 2).tolist()    # the new vocabulary stays
        else:
            assert torch.equal(t, old.state_dict()[name].half().float()), name
    with pytest.raises(SystemExit, match="no tensor matches"):
        init_from(torch.nn.Linear(3, 3), tmp_path / "old.safetensors")


def test_init_from_grows_a_deeper_head_whose_new_layer_starts_as_the_identity(tmp_path):
    """A two-layer head warm-started from a one-layer file computes exactly the one-layer head's
    features at step 0 (its new layer's output projections are zero), and training reaches the new
    layer; a file of the same depth leaves every layer as it was."""
    from opttree.nets.feature_head import FeatureHead
    from opttree.train.common import export_fp16
    from opttree.train.loop import init_from

    cfg = {"hidden_size": 32, "intermediate_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
           "head_dim": 8, "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "max_position_embeddings": 128,
           "num_hidden_layers": 1}
    torch.manual_seed(0)
    old = FeatureHead(cfg)
    export_fp16(tmp_path / "old.safetensors", old.state_dict(), cfg)
    old.load_state_dict({k: v.half().float() for k, v in old.state_dict().items()})   # what the file holds
    deep = FeatureHead({**cfg, "num_hidden_layers": 2})
    new_layer = deep.decoder.layers[1]
    assert float(new_layer.self_attn.o_proj.weight.detach().abs().sum()) > 0       # random before the warm start
    init_from(deep, tmp_path / "old.safetensors")
    assert float(new_layer.self_attn.o_proj.weight.detach().abs().sum()) == 0
    assert float(new_layer.mlp.down_proj.weight.detach().abs().sum()) == 0
    assert float(new_layer.self_attn.q_proj.weight.detach().abs().sum()) > 0       # only the outputs are zeroed
    prev, emb = torch.randn(1, 5, 32), torch.randn(1, 5, 32)
    pos = torch.arange(5)[None]
    with torch.no_grad():
        torch.testing.assert_close(deep.features(prev, emb, pos), old.features(prev, emb, pos))
    deep.features(prev, emb, pos).square().sum().backward()
    assert float(new_layer.self_attn.o_proj.weight.grad.abs().sum()) > 0
    assert float(new_layer.mlp.down_proj.weight.grad.abs().sum()) > 0
    same = FeatureHead(cfg)
    init_from(same, tmp_path / "old.safetensors")
    for name, t in same.state_dict().items():
        assert torch.equal(t, old.state_dict()[name]), name
    # A file whose layers carry another prefix (an EAGLE checkpoint's bare `layers.0.`) loads what
    # matches (fc) and zeroes none of the draft's layers.
    from safetensors.torch import load_file, save_file
    bare = {k.removeprefix("decoder."): v for k, v in load_file(str(tmp_path / "old.safetensors")).items()}
    save_file(bare, str(tmp_path / "bare.safetensors"))
    other = FeatureHead({**cfg, "num_hidden_layers": 2})
    init_from(other, tmp_path / "bare.safetensors")
    assert all(float(lay.self_attn.o_proj.weight.detach().abs().sum()) > 0 for lay in other.decoder.layers)


def test_resumed_head_keeps_its_draft_vocabulary(tmp_path):
    """More data can reorder the most frequent tokens; a resumed head must keep the vocabulary its
    weights were trained over (else its draft LM-head rows no longer match its ids)."""
    from types import SimpleNamespace

    from opttree.train.head import _resumed_vocab

    old, fresh = torch.tensor([1, 5, 9]), torch.tensor([1, 5, 8])
    torch.save({"model": {"vocab_ids": old}}, tmp_path / "head.pt")
    args = SimpleNamespace(resume=True, ckpt_dir=str(tmp_path))
    assert _resumed_vocab(args, fresh).tolist() == [1, 5, 9]
    assert _resumed_vocab(SimpleNamespace(resume=False, ckpt_dir=str(tmp_path)), fresh) is fresh
    # a different vocabulary size is a new head, not a resume: the fresh vocabulary stands
    assert _resumed_vocab(args, torch.tensor([1, 2, 3, 4])).tolist() == [1, 2, 3, 4]


def test_generated_sequences_end_at_their_first_end_of_turn():
    """Self-distillation data stops at end-of-turn: a row that finishes waits in the batch without
    growing (it once kept appending tokens whose features were never stored, ~27% of the data)."""
    from tiny import tiny_llama

    from opttree.train.generate import generate_batch

    model = tiny_llama(seed=3, vocab=64).eval()
    prompts = [[1, 2, 3], [4, 5, 6, 7, 8], [9, 10], [11, 12, 13, 14], [15, 16], [17, 18, 19]]  # > 4 rows: one
    # finished row alone is not dropped
    free = generate_batch(model, prompts, max_new=12, topk=4, eos=set())
    stop = int(free[0]["ids"][len(prompts[0]) + 2])  # the 3rd token row 0 generates
    cut = generate_batch(model, prompts, max_new=12, topk=4, eos={stop})
    for f, c, p in zip(free, cut, prompts):
        resp = f["ids"][len(p):].tolist()
        n = resp.index(stop) + 1 if stop in resp else len(resp)
        assert c["ids"].tolist() == f["ids"][: len(p) + n].tolist()
        assert c["feats"].shape[0] == c["ids"].numel() - 1  # one feature per input position
        assert c["topk_ids"].shape[0] == n and c["topk_p"].shape[0] == n
        assert torch.allclose(c["feats"].float(), f["feats"][: c["feats"].shape[0]].float(), atol=1e-2)
    assert cut[0]["ids"].numel() == len(prompts[0]) + 3


def test_tree_temperature_is_fitted_on_heldout_training_prompts_not_the_eval_set():
    from opttree.train.card import heldout_questions
    from opttree.train.prompts import is_heldout

    qs = heldout_questions(12)
    prompts = build_prompts()
    evals = {t.strip().lower() for q in eval_questions() for t in q["turns"]}
    assert len({q["question_id"] for q in qs}) == 12
    assert all(is_heldout(q["question_id"]) and prompts[q["question_id"]] == q["turns"][0] for q in qs)
    assert not any(q["turns"][0].strip().lower() in evals for q in qs)
    assert min(q["question_id"] for q in qs) < 2252 <= 3295 <= max(q["question_id"] for q in qs)  # all parts
    # ... of the parts every shipped draft's data covers: a newly appended part changes no card's fit
    from opttree.train.prompts import FIT_PARTS, train_prompts

    assert {train_prompts()[q["question_id"]].part for q in qs} == set(FIT_PARTS) == {1, 2, 3, 4}


def test_final_set_is_frozen_balanced_and_disjoint():
    """The final set (written once, never read per item while designing data) measures each released
    draft once; it shares no prompt with the training data or the eval set."""
    import hashlib

    from opttree import paths
    from opttree.train.prompts import train_prompts

    digest = hashlib.sha256(paths.FINAL_PROMPTS.read_bytes()).hexdigest()
    assert digest == "b3a0a449641108eded4e3a719091d0b5a2ffd37168e09fc06e27e5a52c800c21"
    qs = eval_questions(paths.FINAL_PROMPTS)
    cats = {}
    for q in qs:
        cats[q["category"]] = cats.get(q["category"], 0) + 1
    assert len(qs) == 48 and set(cats.values()) == {6} and len(cats) == 8
    seen = {p.text.strip().lower() for p in train_prompts()} | {t.strip().lower() for q in eval_questions()
                                                               for t in q["turns"]}
    assert not any(q["turns"][0].strip().lower() in seen for q in qs)


def _agrees_with_one_forward(model, seqs, prompts, layers):
    """Each stored row against the target run once over the finished sequence alone (no batch, no
    padding, no cache)."""
    with torch.no_grad():
        for s, p in zip(seqs, prompts):
            ids = s["ids"].long()
            assert s["plen"] == len(p) and ids[: len(p)].tolist() == p
            out = model.model(input_ids=ids[None, :-1], output_hidden_states=True)
            h = out.last_hidden_state[0]
            assert s["feats"].dtype == s["layer_feats"].dtype == s["topk_p"].dtype == torch.float16
            assert s["topk_ids"].dtype == torch.int32 and s["feats"].shape == h.shape
            assert torch.allclose(s["feats"].float(), h, atol=2e-2)
            probs = torch.softmax(model.lm_head(h[len(p) - 1:]).float(), -1)
            assert s["topk_ids"].tolist() == torch.topk(probs, 4, -1).indices.tolist()
            assert torch.allclose(s["topk_p"].float(), torch.topk(probs, 4, -1).values, atol=1e-3)
            assert ids[len(p):].tolist() == s["topk_ids"][:, 0].tolist()       # greedy
            lows = torch.stack([out.hidden_states[i][0] for i in layers], 1)
            assert s["layer_feats"].shape == lows.shape and torch.allclose(s["layer_feats"].float(), lows, atol=2e-2)
            assert s["feat_layers"].tolist() == list(layers)


def test_generated_data_are_what_one_forward_over_each_sequence_gives(monkeypatch):
    """The features at every position, the greedy tokens, the top-k rows of every response position and
    the layer states a fused head reads: with rows finishing at different steps (and leaving the batch),
    with one new token, and with every row ending at its first token."""
    from tiny import tiny_llama

    from opttree.train import generate as G

    model = tiny_llama(seed=5, vocab=64, layers=3).eval()
    prompts = [[1, 2, 3], [4, 5, 6, 7, 8, 9], [10, 11], [12, 13, 14, 15], [16, 17, 18], [19, 20, 21, 22, 23]]
    first = G.generate_batch(model, prompts, max_new=10, topk=4, eos=set())
    # rows 0 and 1 end at their third token (others maybe elsewhere): two finished rows leave the batch
    stop = {int(first[r]["ids"][len(prompts[r]) + 2]) for r in (0, 1)}
    dropped = []
    keep_rows = G._keep_rows
    monkeypatch.setattr(G, "_keep_rows", lambda cache, rows: (dropped.append(len(rows)), keep_rows(cache, rows)))
    seqs = G.generate_batch(model, prompts, max_new=10, topk=4, eos=stop, layers=(1, 2))
    assert dropped, "no row left the batch early: the drop path went untested"
    assert len({s["ids"].numel() - s["plen"] for s in seqs}) > 1
    _agrees_with_one_forward(model, seqs, prompts, (1, 2))
    for max_new, eos in ((1, set()), (5, set(range(64)))):     # one token; every row ends at its first
        seqs = G.generate_batch(model, prompts, max_new=max_new, topk=4, eos=eos, layers=(1, 2))
        assert all(s["ids"].numel() - s["plen"] == 1 for s in seqs)
        _agrees_with_one_forward(model, seqs, prompts, (1, 2))
