"""Sequoia in the engine: greedy output equals the target's own, the run's vector reaches the builder
and the trace, a given static shape is decoded as it is, the acceptance measurement and the
export command."""

import json

import pytest
import torch
from tiny import tiny_pair

from opttree.cli import main
from opttree.config import DecodeConfig
from opttree.engine.speculative import run
from opttree.models.draft_assets import card_acceptance
from opttree.train.acceptance import conditional, measure_acceptance, target_rank
from opttree.trees.export import parse_sglang_args, parse_vllm_config
from opttree.trees.sequoia import DEFAULT_ACCEPTANCE, optimal_tree
from opttree.trees.static import EAGLE_25, TR_STATIC

PROMPT = [4, 8, 15, 16, 23, 42]


def greedy(model, prompt, n):
    ids = torch.tensor([prompt])
    out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=n, do_sample=False)
    return out[0, len(prompt):].tolist()


def rank_paths(step):
    out = []
    for parent, rank in zip(step["parents"], step["rank"]):
        out.append((out[parent] if parent >= 0 else ()) + (rank,))
    return out


@pytest.mark.parametrize("drafter", ["classic", "eagle", "early-exit"])
@pytest.mark.parametrize("vector", [None, (0.2, 0.5, 0.1)], ids=["default", "non-monotone"])
@pytest.mark.parametrize("nodes", [12, 0], ids=["n12", "auto"])
def test_sequoia_greedy_output_is_the_targets(drafter, vector, nodes):
    pair = tiny_pair(drafter, eos=9)
    pair.acceptance_by_rank = vector
    cfg = DecodeConfig(method="sequoia", nodes=nodes, max_depth=5, max_new_tokens=30)
    trace = run(pair, "", cfg, prompt_ids=PROMPT)
    assert trace["output_ids"] == greedy(pair.target, PROMPT, 30)
    meta = trace["meta"]
    assert meta["acceptance_by_rank"] == list(vector or DEFAULT_ACCEPTANCE)
    assert meta["acceptance_source"] == ("card" if vector else "default")
    if nodes:   # every full step verifies exactly the optimal tree for the run's vector
        want = optimal_tree(vector or DEFAULT_ACCEPTANCE, nodes, 5)
        full = [s for s in trace["steps"] if max(s["depth"], default=0) == max(len(p) for p in want)]
        assert full and all(rank_paths(s) == want for s in full)
    else:
        assert all(s["auto"]["rule"] == "sequoia" for s in trace["steps"] if s["tokens"])


def test_a_step_near_the_token_limit_verifies_sequoias_tree_cut_shorter():
    """Few tokens left cap a step's depth: Sequoia's tree is then the run's own tree cut there, as a serving
    engine cuts its fixed tree (it was the optimum for the lower depth: a fan of all 25 nodes at depth 1)."""
    pair = tiny_pair("classic", draft_is_target=True)       # every chain accepted: runs reach the capped steps
    want = optimal_tree(DEFAULT_ACCEPTANCE, 25, 6)
    for new in (9, 10, 11, 12):
        trace = run(pair, "", DecodeConfig(method="sequoia", nodes=25, max_depth=6, max_new_tokens=new),
                    prompt_ids=PROMPT)
        assert trace["output_ids"] == greedy(pair.target, PROMPT, new)
        capped = [s for s in trace["steps"] if "depth capped" in s["stop_reason"]]
        assert capped, new
        for s in capped:
            depth = max(s["depth"])
            assert rank_paths(s) == [p for p in want if len(p) <= depth], (new, depth)
    # Token Recycling's template too: its 25 first nodes cut, not the template's first 25 within the cap
    template = [p for p in TR_STATIC if len(p) <= 6][:25]
    trace = run(pair, "", DecodeConfig(method="tr-static", nodes=25, max_depth=6, max_new_tokens=10),
                prompt_ids=PROMPT)
    capped = [s for s in trace["steps"] if "depth capped" in s["stop_reason"]]
    assert capped and all(set(rank_paths(s)) == {p for p in template if len(p) <= max(s["depth"])} for s in capped)


def test_a_given_static_shape_is_decoded_as_it_is():
    pair = tiny_pair("classic", draft_is_target=True)
    paths = [(0,), (1,), (0, 0), (0, 0, 0)]
    cfg = DecodeConfig(method="eagle-static", nodes=25, max_depth=6, max_new_tokens=24)
    trace = run(pair, "", cfg, prompt_ids=PROMPT, paths=paths)
    assert trace["output_ids"] == greedy(pair.target, PROMPT, 24)
    assert trace["meta"]["static_paths"] == [list(p) for p in paths]
    assert all(set(rank_paths(s)) <= set(paths) for s in trace["steps"])
    assert rank_paths(trace["steps"][0]) == paths
    plain = run(pair, "", cfg, prompt_ids=PROMPT)
    assert rank_paths(plain["steps"][0]) == EAGLE_25 and "static_paths" not in plain["meta"]


def test_acceptance_of_a_draft_equal_to_the_target_is_all_rank_zero():
    pair = tiny_pair("classic", draft_is_target=True)
    qs = [{"question_id": i, "turns": ["t1 t2 t3"]} for i in range(2)]
    cfg = DecodeConfig(method="opt-tree", nodes=12, max_depth=4, max_new_tokens=20)
    got = measure_acceptance(pair, qs, cfg)
    assert got["rows"] > 0 and got["acceptance_by_rank"][0] == 1.0 and sum(got["acceptance_by_rank"]) == 1.0


def test_acceptance_of_a_random_draft_is_a_distribution_over_ranks():
    pair = tiny_pair("classic")
    qs = [{"question_id": i, "turns": [f"t{i} t{i + 1}"]} for i in range(3)]
    got = measure_acceptance(pair, qs, DecodeConfig(method="opt-tree", nodes=12, max_depth=4, max_new_tokens=20))
    a = got["acceptance_by_rank"]
    assert len(a) == 8 and 0.0 <= sum(a) <= 1.0 + 1e-9
    assert got["rows"] == sum(c["rows"] for c in got["by_depth"].values())
    assert got["conditional"][0] == a[0] and all(c >= x - 1e-9 for c, x in zip(got["conditional"], a))


def test_target_rank_and_conditional():
    # the row's first id is the target's choice; two draft tokens have a larger q
    assert target_rank({"ids": [5, 1, 2], "p": [0.5, 0.3, 0.2], "q": [0.1, 0.6, 0.3]}) == 2
    assert target_rank({"ids": [5] + list(range(8)), "p": [0.9] + [0.0] * 8, "q": [0.0] + [0.1] * 8}) == 8
    assert conditional([0.5, 0.25, 0.125]) == [0.5, 0.5, 0.5]


def test_card_acceptance_reads_a_card(tmp_path):
    draft = tmp_path / "d.safetensors"
    assert card_acceptance(str(draft)) is None
    (tmp_path / "d.json").write_text(json.dumps({"acceptance_by_rank": [0.6, 0.1]}))
    assert card_acceptance(str(draft)) == (0.6, 0.1)
    (tmp_path / "d.json").write_text(json.dumps({"acceptance_by_rank": [1.6]}))
    assert card_acceptance(str(draft)) is None


def test_export_tree_prints_a_config_that_parses_back(capsys):
    assert main(["export-tree", "--format", "vllm-tree", "--method", "binary", "--nodes", "6"]) == 0
    method, paths = parse_vllm_config(capsys.readouterr().out)
    assert method == "eagle" and paths == [(0,), (1,), (0, 0), (0, 1), (1, 0), (1, 1)]
    assert main(["export-tree", "--format", "sglang", "--method", "chain", "--nodes", "4"]) == 0
    out = capsys.readouterr()
    flags = parse_sglang_args(out.out)
    assert (flags.steps, flags.topk, flags.draft_tokens) == (4, 1, 5) and "note:" in out.err
    assert main(["export-tree", "--format", "vllm", "--method", "sequoia", "--nodes", "10",
                 "--drafter", "classic"]) == 0
    method, paths = parse_vllm_config(capsys.readouterr().out)    # vLLM ≥ 0.21: a chain as deep as the tree
    assert method == "draft_model" and paths == [(0,) * d for d in range(1, len(paths) + 1)] and len(paths) < 10


def test_bundled_target_sequoia_matches_greedy(smollm):
    """The real model with the trained head and its card's vector: Sequoia decodes the target's own text."""
    from opttree.decoding.prompts import encode_prompt
    from opttree.drafters.registry import with_drafter

    pair = with_drafter(smollm, "eagle")
    prompt = "Explain photosynthesis."
    ids = encode_prompt(smollm.tokenizer, prompt)
    trace = run(pair, prompt, DecodeConfig(method="sequoia", nodes=25, max_depth=8, max_new_tokens=24))
    assert trace["output_ids"] == greedy(smollm.target, ids, 24)
    assert trace["meta"]["acceptance_source"] == ("card" if pair.acceptance_by_rank else "default")


def test_every_drafted_run_records_its_acceptance_vector_and_ar_none():
    pair = tiny_pair("classic", eos=9)
    pair.acceptance_by_rank = (0.5, 0.2)
    trace = run(pair, "", DecodeConfig(method="opt-tree", nodes=6, max_depth=3, max_new_tokens=6), prompt_ids=PROMPT)
    assert trace["meta"]["acceptance_by_rank"] == [0.5, 0.2] and trace["meta"]["acceptance_source"] == "card"
    ar = run(pair, "", DecodeConfig(method="ar", max_new_tokens=4), prompt_ids=PROMPT)
    assert "acceptance_by_rank" not in ar["meta"]
