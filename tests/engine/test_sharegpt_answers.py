"""Recipe (b): the target's own answers to real users' turns (opttree/train/sharegpt_answers.py), stored
as the shards the trainers read: each prompt is the conversation so far in the chat template, each
answer the target's greedy continuation, each top-k row its distribution there."""

from __future__ import annotations

import argparse
import json
import pickle

import pytest
import torch
from tiny import END, ChatToyTokenizer, tiny_llama

from opttree.train import data as D
from opttree.train import sharegpt as S
from opttree.train.generate import load_shards
from opttree.train.sharegpt_answers import run_answers, turn_prompts
from opttree.train.teacher_forcing import read_manifest, run_teacher_forcing


def _words(ids) -> str:
    return " ".join(f"t{i}" for i in ids)


RECORDS = [   # three user turns; one long first turn; one short
    {"id": "a_0", "conversations": [
        {"from": "human", "value": _words([10, 11, 12])}, {"from": "gpt", "value": _words([20, 21, 22, 23])},
        {"from": "human", "value": _words([13, 14])}, {"from": "gpt", "value": _words([30, 31])},
        {"from": "human", "value": _words([15])}, {"from": "gpt", "value": _words([32])}]},
    {"id": "long_0", "conversations": [
        {"from": "human", "value": _words(range(8, 60))}, {"from": "gpt", "value": _words([40])}]},
    {"id": "b_0", "conversations": [
        {"from": "human", "value": _words([16, 17, 18, 19])}, {"from": "gpt", "value": _words([41, 42])}]},
]
MAX_NEW = 5


def _cfg(tmp_path, **kw) -> argparse.Namespace:
    source = tmp_path / "sample.json"
    source.write_text(json.dumps(RECORDS), encoding="utf-8")
    base = dict(out=str(tmp_path / "ans"), source=str(source), tokens=0, conversations=0, shard_size=3, topk=4,
                threads=1, layer_feats=True, turns=2, max_prompt=40, max_new=MAX_NEW, batch=2)
    return argparse.Namespace(**{**base, **kw})


def _target():
    return tiny_llama(seed=7, vocab=64, layers=3, eos=END, scale=3.0)


def _chat(turns):
    return [{"role": r, "content": t} for r, t in turns]


def test_each_user_turn_is_a_prompt_with_the_earlier_turns_as_context():
    tok = ChatToyTokenizer()
    conv = S.Conversation("a_0", S.normalise(RECORDS[0]), False)
    prompts = turn_prompts(tok, conv, turns=5, max_prompt=1000)
    assert len(prompts) == 3
    for k, ids in enumerate(prompts):
        assert ids == tok.apply_chat_template(_chat(conv.turns[: 2 * k + 1]), add_generation_prompt=True)["input_ids"]
    assert turn_prompts(tok, conv, turns=2, max_prompt=1000) == prompts[:2]
    # a turn over the limit ends the conversation's prompts: later turns only grow
    assert turn_prompts(tok, conv, turns=5, max_prompt=len(prompts[1]) - 1) == prompts[:1]
    assert turn_prompts(tok, conv, turns=5, max_prompt=len(prompts[0]) - 1) == []


@torch.no_grad()
def _greedy(model, prompt: list[int]) -> tuple[list[int], torch.Tensor, torch.Tensor]:
    """The target's answer without a cache or batch, and its hidden states and probs over the whole sequence."""
    ids = list(prompt)
    for _ in range(MAX_NEW):
        t = int(model(input_ids=torch.tensor(ids)[None]).logits[0, -1].argmax())
        ids.append(t)
        if t == END:
            break
    out = model.model(input_ids=torch.tensor(ids)[None], output_hidden_states=True)
    return ids, out, torch.softmax(model.lm_head(out.last_hidden_state[0]).float(), -1)


def test_answers_are_the_targets_greedy_continuations_stored_for_the_trainers(tmp_path):
    model, tok = _target(), ChatToyTokenizer()
    cfg = _cfg(tmp_path)
    totals = run_answers(model, tok, cfg)
    seqs = load_shards(cfg.out)
    # conversation order and turn order, though answered in batches sorted by prompt length
    assert [(s["conversation_id"], s["turn"]) for s in seqs] == [("a_0", 0), ("a_0", 1), ("b_0", 0)]
    manifest = read_manifest(cfg.out)
    assert manifest[0]["skipped"] == {"long_0": "the first user turn takes more than 40 tokens"}
    assert totals["sequences"] == 3 and totals["target_tokens"] == sum(s["ids"].numel() - s["plen"] for s in seqs)
    for s in seqs:
        conv = S.Conversation(s["conversation_id"], S.normalise(RECORDS[[r["id"] for r in RECORDS].index(
            s["conversation_id"])]), False)
        prompt = turn_prompts(tok, conv, 2, 40)[s["turn"]]
        ids, out, probs = _greedy(model, prompt)
        P, L = s["plen"], len(ids)
        assert P == len(prompt) and s["ids"].tolist() == ids
        assert s["heldout"] == S.is_heldout(s["conversation_id"]) and s["source"] == "sharegpt-answers"
        assert torch.allclose(s["feats"].float(), out.last_hidden_state[0, :-1], atol=1e-3)
        for i, layer in enumerate(s["feat_layers"].tolist()):
            assert torch.allclose(s["layer_feats"][:, i].float(), out.hidden_states[layer][0, :-1], atol=1e-3)
        top = torch.topk(probs[P - 1: L - 1], 4, -1)
        assert torch.equal(s["topk_ids"].long(), top.indices)
        assert torch.allclose(s["topk_p"].float(), top.values, atol=1e-3)
    # every answer token is a training target, and a fused head reads them
    train, test = D.load_split(cfg.out, layer_feats=True)
    assert D.response_tokens(train + test) == totals["target_tokens"]


def test_the_budget_counts_answer_tokens_and_a_run_resumes(tmp_path):
    model, tok = _target(), ChatToyTokenizer()
    first = run_answers(model, tok, _cfg(tmp_path, shard_size=1, tokens=1))   # one shard is over the budget
    assert first["sequences"] == 2 and len(read_manifest(tmp_path / "ans")) == 1
    before = (tmp_path / "ans" / "shard_00000.pt").read_bytes()
    again = run_answers(model, tok, _cfg(tmp_path, shard_size=1))
    assert again["sequences"] == 3 and (tmp_path / "ans" / "shard_00000.pt").read_bytes() == before
    stats = json.loads((tmp_path / "ans" / "stats.json").read_text())
    assert stats["tokens"] == again["target_tokens"] and stats["sequences"] == 3


def test_both_recipes_train_together(tmp_path):
    """`--data` names several folders: recipe (a)'s and (b)'s shards load side by side, each
    sequence split by its own conversation's held-out flag."""
    model, tok = _target(), ChatToyTokenizer()
    run_answers(model, tok, _cfg(tmp_path))
    run_teacher_forcing(model, tok, argparse.Namespace(**{**vars(_cfg(tmp_path)), "out": str(tmp_path / "tf"),
                                                           "max_tokens": 1024, "min_targets": 1}))
    train, test = D.load_split([tmp_path / "ans", tmp_path / "tf"], layer_feats=True)
    sources = sorted(s["source"] for s in train + test)
    assert sources == ["sharegpt"] * 3 + ["sharegpt-answers"] * 3
    assert D.response_tokens(train + test) == D.response_tokens(load_shards(tmp_path / "ans")) + \
        D.response_tokens(load_shards(tmp_path / "tf"))


def test_a_token_budget_stops_reading_shards_once_it_is_reached(tmp_path):
    """`--tokens N` bounds peak memory: shards past the budget are never opened (here they are
    unreadable, and loading everything fails on them)."""
    model, tok = _target(), ChatToyTokenizer()
    run_answers(model, tok, _cfg(tmp_path, shard_size=1))
    paths = sorted((tmp_path / "ans").glob("shard_*.pt"))
    assert len(paths) == 3
    first = load_shards(tmp_path / "ans")[0]
    for p in paths[1:]:
        p.write_bytes(b"not a shard")
    train, test = D.load_split(tmp_path / "ans", max_tokens=D.target_tokens(first), layer_feats=True)
    assert [s["ids"].tolist() for s in train + test] == [first["ids"].tolist()]
    with pytest.raises(pickle.UnpicklingError):
        D.load_split(tmp_path / "ans", layer_feats=True)
