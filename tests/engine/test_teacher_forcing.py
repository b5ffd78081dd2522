"""Recipe (a): the target teacher-forced over conversations (opttree/train/teacher_forcing.py) writes
the shards the trainers read, with each stored top-k row the target's distribution after its token."""

from __future__ import annotations

import argparse
import json

import pytest
import torch
from reference import needs_target
from tiny import END, ROLE_IDS, START, ChatToyTokenizer, tiny_llama

from opttree.train import data as D
from opttree.train import sharegpt as S
from opttree.train.generate import load_shards
from opttree.train.teacher_forcing import chat_layout, read_manifest, run_teacher_forcing


def _words(ids) -> str:
    return " ".join(f"t{i}" for i in ids)


ANSWERS = {"c1_0": [[20, 21, 22, 23], [30, 31, 32]], "c2_0": [[40, 41, 42, 43, 44, 45]]}
RECORDS = [
    {"id": "c1_0", "conversations": [
        {"from": "human", "value": _words([10, 11, 12])}, {"from": "gpt", "value": _words(ANSWERS["c1_0"][0])},
        {"from": "human", "value": _words([13, 14])}, {"from": "chatgpt", "value": _words(ANSWERS["c1_0"][1])}]},
    {"id": "c2_0", "conversations": [
        {"from": "system", "value": "t60"}, {"from": "human", "value": _words([15, 16, 17, 18])},
        {"from": "gpt", "value": _words(ANSWERS["c2_0"][0])}]},
]


def _cfg(tmp_path, **kw) -> argparse.Namespace:
    source = tmp_path / "sample.json"
    text = json.dumps(RECORDS + [{"id": "cut", "conversations": [{"from": "human", "value": "t9"}]}])
    source.write_text(text[:-30], encoding="utf-8")   # cut off inside the last record, as the real file is
    base = dict(out=str(tmp_path / "tf"), source=str(source), tokens=0, conversations=0, shard_size=1,
                max_tokens=1024, min_targets=1, topk=4, threads=1, layer_feats=True)
    return argparse.Namespace(**{**base, **kw})


def _target(seed: int = 5):
    return tiny_llama(seed=seed, vocab=64, layers=3, eos=END)


def test_chat_layout_marks_the_assistant_text_and_its_end_of_turn():
    tok = ChatToyTokenizer()
    turns = S.normalise(RECORDS[0])
    ids, spans = chat_layout(tok, turns, {END}, max_tokens=1024)
    assert ids == tok.apply_chat_template([{"role": r, "content": t} for r, t in turns])["input_ids"]
    assert [ids[a:b] for a, b in spans] == [ANSWERS["c1_0"][0] + [END], ANSWERS["c1_0"][1] + [END]]
    assert ids[spans[0][0] - 2: spans[0][0]] == [START, ROLE_IDS["assistant"]]   # the header is context
    cut, cut_spans = chat_layout(tok, turns, {END}, max_tokens=spans[0][0] + 2)   # cut inside the first answer
    assert cut == ids[: spans[0][0] + 2] and cut_spans == [(spans[0][0], spans[0][0] + 2)]


def test_teacher_forced_shards_load_and_align_with_the_target(tmp_path):
    model, tok = _target(), ChatToyTokenizer()
    cfg = _cfg(tmp_path)
    log = S.ReadLog()
    totals = run_teacher_forcing(model, tok, cfg, log)
    assert log.records == 2 and log.cut_at is not None and totals["sequences"] == 2
    seqs = load_shards(cfg.out)
    assert [s["conversation_id"] for s in seqs] == ["c1_0", "c2_0"]
    for s in seqs:
        ids, P = s["ids"].long(), s["plen"]
        L = ids.numel()
        assert s["feats"].shape == (L - 1, 32) and s["layer_feats"].shape == (L - 1, 2, 32)
        assert s["topk_ids"].shape == (L - P, 4) and s["heldout"] == S.is_heldout(s["conversation_id"])
        with torch.no_grad():
            out = model.model(input_ids=ids[None], output_hidden_states=True)
            probs = torch.softmax(model.lm_head(out.last_hidden_state[0]).float(), -1)
        assert torch.allclose(s["feats"].float(), out.last_hidden_state[0, :-1], atol=1e-2)
        for i, layer in enumerate(s["feat_layers"].tolist()):   # the fused head's lower layers
            assert torch.allclose(s["layer_feats"][:, i].float(), out.hidden_states[layer][0, :-1], atol=1e-2)
        # row r is the target's distribution after token P-1+r, i.e. over token P+r
        top = torch.topk(probs[P - 1: L - 1], 4, -1)
        assert torch.equal(s["topk_ids"].long(), top.indices)
        has = s["topk_p"][:, 0] > 0
        assert torch.allclose(s["topk_p"][has].float(), top.values[has], atol=1e-3)
        assert (s["topk_p"][~has] == 0).all()
        # targets exactly where the next token is an assistant answer's text or its end-of-turn
        written = [t for a in ANSWERS[s["conversation_id"]] for t in a + [END]]
        assert ids[P:][has].tolist() == written
    train, test = D.load_split(cfg.out, layer_feats=True)
    assert len(train) + len(test) == 2 and D.response_tokens(train + test) == 4 + 1 + 3 + 1 + 6 + 1
    batch = D.collate(seqs)   # the trainers' view: a target at row j is the distribution over token j+1
    b, s = 0, seqs[0]
    j = s["plen"] - 1
    assert batch["tk_ids"][b, j].tolist() == s["topk_ids"][0].tolist() and batch["tk_p"][b, j, 0] > 0


def test_a_run_resumes_where_it_stopped_and_logs_what_it_read(tmp_path):
    model, tok = _target(), ChatToyTokenizer()
    first = run_teacher_forcing(model, tok, _cfg(tmp_path, conversations=1))   # stops after one shard
    assert first["sequences"] == 1 and sorted(p.name for p in (tmp_path / "tf").glob("shard_*.pt")) == [
        "shard_00000.pt"]
    before = (tmp_path / "tf" / "shard_00000.pt").read_bytes()
    again = run_teacher_forcing(model, tok, _cfg(tmp_path))
    assert again["sequences"] == 2 and (tmp_path / "tf" / "shard_00000.pt").read_bytes() == before   # kept
    manifest = read_manifest(tmp_path / "tf")
    assert {b: e["conversations"] for b, e in manifest.items()} == {0: ["c1_0"], 1: ["c2_0"]}
    assert manifest[1]["target_tokens"] == 7 and manifest[1]["tokens"] > 7
    source = json.loads((tmp_path / "tf" / "source.json").read_text())
    assert source["read"]["records"] == 2 and source["read"]["roles"]["system"] == 1
    stats = json.loads((tmp_path / "tf" / "stats.json").read_text())
    assert stats["sequences"] == 2 and stats["tokens"] == 9 + 7
    # a killed run loses at most the shard it was writing: that one is made again, the same
    (tmp_path / "tf" / "shard_00001.pt").unlink()
    run_teacher_forcing(model, tok, _cfg(tmp_path))
    redone = torch.load(tmp_path / "tf" / "shard_00001.pt", weights_only=True)[0]
    assert redone["conversation_id"] == "c2_0"
    # shards made from other conversations are refused, never mixed
    with pytest.raises(SystemExit, match="other conversations"):
        run_teacher_forcing(model, tok, _cfg(tmp_path, shard_size=2))


@needs_target
def test_teacher_forced_data_trains_a_head_unchanged(tmp_path):
    """On the bundled target: its real chat template's spans, then `python -m opttree.train --kind
    head --no-generate --data <dir>` trains on the shards as they are."""
    from opttree.config import BUNDLED_ID
    from opttree.models.loading import load_tokenizer
    from opttree.train.__main__ import main
    from opttree.train.common import load_target

    tok = load_tokenizer(BUNDLED_ID)
    records = [{"id": f"r{i}_0", "conversations": [
        {"from": "human", "value": q}, {"from": "gpt", "value": a}, {"from": "human", "value": "Thanks!"},
        {"from": "gpt", "value": "You are welcome."}]} for i, (q, a) in enumerate([
            ("Name a primary colour.", "Red is a primary colour."),
            ("What do bees make?", "Bees make honey and wax.")] * 2)]
    ids, spans = chat_layout(tok, S.normalise(records[0]), {tok.eos_token_id}, 1024)
    assert [tok.decode(ids[a:b]) for a, b in spans] == ["Red is a primary colour.<|im_end|>",
                                                        "You are welcome.<|im_end|>"]
    source = tmp_path / "sample.json"
    source.write_text(json.dumps(records), encoding="utf-8")
    cfg = argparse.Namespace(out=str(tmp_path / "tf"), source=str(source), tokens=0, conversations=0, shard_size=2,
                             max_tokens=1024, min_targets=1, topk=20, threads=1, layer_feats=False)
    run_teacher_forcing(load_target(BUNDLED_ID), tok, cfg)
    card = main(["--kind", "head", "--no-generate", "--data", cfg.out, "--out", str(tmp_path / "head.safetensors"),
                 "--steps", "2", "--eval-every", "2", "--batch-tokens", "256", "--draft-vocab", "300",
                 "--unroll", "2", "--ckpt-dir", str(tmp_path / "ck"), "--tau-prompts", "0", "--fit-temperature", "0",
                 "--threads", "1"])
    assert card["steps"] == 2 and card["data"]["train_sequences"] + card["data"]["heldout_sequences"] == 4
    assert len(card["heldout_top1_by_depth"]) == 5
    # --init-vocab: warm-started over the first head's own vocabulary, not the data's most frequent
    # tokens (here 40 of them), so that step 0 evaluates the first head exactly
    from safetensors.torch import load_file

    again = main(["--kind", "head", "--no-generate", "--data", cfg.out, "--out", str(tmp_path / "again.safetensors"),
                  "--init-from", str(tmp_path / "head.safetensors"), "--init-vocab", "--draft-vocab", "40",
                  "--steps", "0", "--epochs", "0", "--unroll", "2", "--ckpt-dir", str(tmp_path / "ck2"),
                  "--tau-prompts", "0", "--fit-temperature", "0", "--threads", "1"])
    first, second = load_file(str(tmp_path / "head.safetensors")), load_file(str(tmp_path / "again.safetensors"))
    assert again["draft_vocab"] == card["draft_vocab"] != 40
    assert again["history"][0]["heldout_top1"] == card["heldout_top1_by_depth"]
    assert all(torch.equal(v, second[k]) for k, v in first.items())
