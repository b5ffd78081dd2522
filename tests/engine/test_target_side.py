"""The trace records the target's side of each verified row: p_target per node and the top-k rows
(the target's and the draft's top 8 with both probabilities), bounded, validated, and equal to what a
plain forward of each model gives for the same context."""

import copy
import json

import pytest
import torch
from tiny import tiny_pair

from opttree.config import DecodeConfig
from opttree.decoding.sampling import warp
from opttree.engine import recording, speculative
from opttree.engine.speculative import run
from opttree.errors import BadInput
from opttree.trace import ROWS_PER_STEP, TOPK
from opttree.trace_file import dumps, loads, validate_trace

PROMPT = [5, 6, 7]


@pytest.fixture(scope="module")
def pair():
    return tiny_pair("classic")


@pytest.fixture(scope="module")
def greedy(pair):
    return run(pair, "", DecodeConfig(method="opt-tree", nodes=12, threshold=0.01, max_depth=4, max_new_tokens=14),
               prompt_ids=PROMPT)


@pytest.fixture(scope="module")
def sampled(pair):
    return run(pair, "", DecodeConfig(method="binary", nodes=10, max_depth=3, max_new_tokens=10, temperature=0.7,
                                      top_k=12, top_p=0.9, seed=3), prompt_ids=PROMPT)


def contexts(trace):
    """Per step: the committed ids before it (its last id is the step's root)."""
    ctx, out = list(trace["prompt_ids"]), []
    for s in trace["steps"]:
        out.append(list(ctx))
        ctx += s["committed"]
    return out


def path_to(step, node):
    out = []
    while node != -1:
        out.append(step["tokens"][node])
        node = step["parents"][node]
    return out[::-1]


@torch.inference_mode()
def next_logits(model, ids):
    return model(input_ids=torch.tensor([ids])).logits[0, -1]


def test_fields_are_recorded_and_bounded(greedy):
    validate_trace(greedy)
    assert "softmax" in greedy["meta"]["target_distribution"]
    for s in greedy["steps"]:
        n = len(s["tokens"])
        assert len(s["p_target"]) == n
        rows = s["topk_rows"]
        if n == 0:          # the last step with one token left drafts nothing: no draft row to record
            assert rows == [] and s is greedy["steps"][-1]
            continue
        assert 1 <= len(rows) <= ROWS_PER_STEP
        nodes = [r["node"] for r in rows]
        assert nodes[0] == -1                                        # the root first
        kept_path = [a for a in s["accepted"] if a in nodes]
        assert nodes[1:1 + len(kept_path)] == kept_path              # then the accepted path, in order
        for r in rows:
            assert TOPK <= len(r["ids"]) <= 2 * TOPK and len(set(r["ids"])) == len(r["ids"])
            assert r["p"] == sorted(r["p"], reverse=True)
            assert r["texts"] == [f"t{t} " for t in r["ids"]]
        # A child's row entry agrees with the node's own q and p_target.
        by_node = {r["node"]: r for r in rows}
        for j, par in enumerate(s["parents"]):
            row = by_node.get(par)
            if row and s["tokens"][j] in row["ids"]:
                at = row["ids"].index(s["tokens"][j])
                assert row["q"][at] == pytest.approx(s["q"][j], abs=2e-6)
                assert row["p"][at] == pytest.approx(s["p_target"][j], abs=2e-6)


def test_p_target_is_the_targets_softmax_at_the_parent_row(pair, greedy):
    checked = 0
    for s, ctx in zip(greedy["steps"], contexts(greedy)):
        for j, par in enumerate(s["parents"]):
            probs = torch.softmax(next_logits(pair.target, ctx + path_to(s, par)).float(), -1)
            assert s["p_target"][j] == pytest.approx(float(probs[s["tokens"][j]]), abs=1e-5)
            checked += 1
    assert checked > 20


def test_rows_hold_the_targets_and_the_drafts_top_k(pair, greedy):
    for s, ctx in zip(greedy["steps"], contexts(greedy)):
        for r in s["topk_rows"]:
            ids = ctx + path_to(s, r["node"])
            p = torch.softmax(next_logits(pair.target, ids).float(), -1)
            q = torch.softmax(next_logits(pair.draft_model, ids).float(), -1)   # tree temperature 1
            assert set(torch.topk(p, TOPK).indices.tolist()) <= set(r["ids"])
            assert set(torch.topk(q, TOPK).indices.tolist()) <= set(r["ids"])
            assert r["p"] == pytest.approx(p[r["ids"]].tolist(), abs=1e-5)
            assert r["q"] == pytest.approx(q[r["ids"]].tolist(), abs=1e-5)


def test_sampling_runs_record_the_pickers_distribution(pair, sampled):
    meta = sampled["meta"]
    assert "temperature 0.7" in meta["target_distribution"] and "top-k 12" in meta["target_distribution"]
    for s, ctx in zip(sampled["steps"], contexts(sampled)):
        for j, par in enumerate(s["parents"]):
            probs = warp(next_logits(pair.target, ctx + path_to(s, par)), 0.7, 12, 0.9)
            assert s["p_target"][j] == pytest.approx(float(probs[s["tokens"][j]]), abs=1e-5)


def test_ar_runs_record_no_rows(pair):
    trace = run(pair, "", DecodeConfig(method="ar", max_new_tokens=3), prompt_ids=PROMPT)
    assert all("topk_rows" not in s and "p_target" not in s for s in trace["steps"])
    assert "target_distribution" not in trace["meta"]


def test_rows_per_run_are_capped(pair, monkeypatch):
    monkeypatch.setattr(speculative, "ROWS_PER_RUN", 5)
    trace = run(pair, "", DecodeConfig(method="opt-tree", nodes=8, max_depth=3, max_new_tokens=12),
                prompt_ids=PROMPT)
    counts = [len(s["topk_rows"]) for s in trace["steps"]]
    assert sum(counts) == 5 and counts[-1] == 0 and len(counts) > 1
    assert all(len(s["p_target"]) == len(s["tokens"]) for s in trace["steps"])   # p_target is always kept


def test_draft_rows_keep_the_root_and_the_likeliest_nodes():
    from opttree.trees.draft_tree import ROOT, DraftTree

    tree = DraftTree()
    for q in (0.5, 0.3, 0.2):
        tree.add(ROOT, len(tree), q, len(tree))
    rows = recording.DraftRows(keep=3)
    rows.note(tree, [ROOT], torch.full((1, 4), 0.25))
    rows.note(tree, [0, 1, 2], torch.eye(4)[:3])
    assert set(rows.rows) == {ROOT, 0, 1}
    sub = tree.subset([1, 2])             # node 1 becomes node 0 of the final tree
    kept = rows.for_tree(sub)
    assert set(kept) == {ROOT, 0} and torch.equal(kept[0], torch.eye(4)[1])


def test_old_traces_without_the_target_side_still_load(greedy):
    old = copy.deepcopy(greedy)
    old["meta"].pop("target_distribution")
    for s in old["steps"]:
        s.pop("p_target")
        s.pop("topk_rows")
    assert loads(dumps(old)) == json.loads(dumps(old))


def _row(t):
    return t["steps"][0]["topk_rows"][0]


@pytest.mark.parametrize("mutate,needle", [
    (lambda t: t["steps"][0]["p_target"].append(0.5), "p_target must be"),
    (lambda t: t["steps"][0]["p_target"].__setitem__(0, 1.5), "p_target must be"),
    (lambda t: t["steps"][0].__setitem__("topk_rows", {}), "topk_rows must be a list"),
    (lambda t: t["steps"][0]["topk_rows"].extend([_row(t)] * ROWS_PER_STEP), "at most"),
    (lambda t: _row(t).__setitem__("node", 10**6), "not a distinct node"),
    (lambda t: t["steps"][0]["topk_rows"].append(copy.deepcopy(_row(t))), "not a distinct node"),
    (lambda t: _row(t).pop("q"), "needs node, ids"),
    (lambda t: _row(t)["texts"].pop(), "texts must have"),
    (lambda t: _row(t)["texts"].__setitem__(0, 5), "topk_rows texts must be strings"),
    (lambda t: _row(t)["ids"].__setitem__(1, _row(t)["ids"][0]), "distinct token ids"),
    (lambda t: _row(t).__setitem__("ids", []), "1 to 16 ids"),
    (lambda t: _row(t)["q"].__setitem__(0, 0.99), "q must be probabilities"),
    (lambda t: _row(t)["p"].__setitem__(0, "0.3"), "p must be probabilities"),
])
def test_bad_target_side_is_rejected(greedy, mutate, needle):
    bad = copy.deepcopy(greedy)
    mutate(bad)
    with pytest.raises(BadInput, match=needle):
        loads(dumps(bad))


def test_too_many_rows_in_one_run_is_rejected(greedy, monkeypatch):
    from opttree import trace_file

    total = sum(len(s["topk_rows"]) for s in greedy["steps"])
    monkeypatch.setattr(trace_file, "ROWS_PER_RUN", total - 1)
    with pytest.raises(BadInput, match="per run"):
        loads(dumps(greedy))


@pytest.mark.parametrize("top_k,top_p", [(0, 0.9), (0, 0.5), (20, 0.95), (0, 0.999), (3, 0.2), (0, 0.0)])
def test_theory_distribution_equals_the_pickers_warp(top_k, top_p):
    from opttree.decoding.sampling import NUCLEUS_CANDIDATES, theory_distribution

    gen = torch.Generator().manual_seed(0)
    # Peaked rows (nucleus among the candidates) and flat rows (nucleus wider: the full-sort path).
    logits = torch.cat([torch.randn(6, 3000, generator=gen) * 6, torch.randn(3, 3000, generator=gen) * 0.1])
    got = theory_distribution(logits, 0.8, top_k, top_p)
    want = warp(logits, 0.8, top_k, top_p)
    assert torch.allclose(got, want, atol=1e-7)
    if top_k == 0 and top_p > 0.9:
        assert int((want[-1] > 0).sum()) > NUCLEUS_CANDIDATES      # the fallback really ran
    assert torch.equal(theory_distribution(logits, 0.0), torch.softmax(logits, -1))


def test_speed_runs_can_leave_the_target_side_out(pair):
    trace = run(pair, "", DecodeConfig(method="opt-tree", nodes=6, max_new_tokens=4), prompt_ids=PROMPT,
                record_target=False)
    validate_trace(trace)
    assert all("topk_rows" not in s and "p_target" not in s for s in trace["steps"])
    assert "target_distribution" not in trace["meta"]
