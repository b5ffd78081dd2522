"""Token Recycling, prompt lookup and retrieval fusion: exact output, what they propose, where tables live."""

from dataclasses import replace

import numpy as np
import pytest
import torch
from reference import reference
from tiny import tiny_pair

from opttree.config import METHODS, DecodeConfig
from opttree.drafters.context import DraftContext
from opttree.drafters.recycling import K, RecyclingDrafter, RecyclingTable
from opttree.drafters.registry import make_drafter
from opttree.drafters.retrieval import continuation_tree, continuations, load_corpus
from opttree.engine.cost import load_or_measure
from opttree.engine.speculative import run
from opttree.engine.target_state import TargetState
from opttree.errors import BadInput
from opttree.models.loading import last_logits_only
from opttree.trace_file import validate_trace
from opttree.trees.static import TR_STATIC, shape_paths

# Prompts with repeats, so lookup and retrieval find matches; the last one repeats nothing.
PROMPTS = [[3, 5, 7, 11, 13, 3, 5, 7], [40, 41, 42, 43, 44, 45, 40, 41, 42], [1, 2]]


def variants():
    """(label, pair, extra settings): the two training-free drafters, and fusion with both model drafters."""
    return [pytest.param(label, pair, extra, id=label) for label, pair, extra in [
        ("recycling", tiny_pair("recycling", eos=9), {}), ("lookup", tiny_pair("lookup", eos=9), {}),
        ("classic+retrieval", tiny_pair("classic", eos=9), {"retrieval": "on"}),
        ("eagle+retrieval", tiny_pair("eagle", eos=9), {"retrieval": "on"})]]


@pytest.mark.parametrize("label,pair,extra", variants())
def test_greedy_equals_generate_for_every_tree_method(label, pair, extra):
    refs = {tuple(p): reference(pair.target, p, 30) for p in PROMPTS}
    sources = set()
    for method in METHODS:
        for prompt in PROMPTS:
            cfg = DecodeConfig(method=method, nodes=24, threshold=0.05, max_depth=6, max_new_tokens=30, **extra)
            trace = run(pair, "", cfg, prompt_ids=prompt)
            assert trace["output_ids"] == refs[tuple(prompt)], (label, method, prompt)
            validate_trace(trace)
            assert all(len(s["tokens"]) <= 24 for s in trace["steps"])   # fused trees too
            sources |= {src for s in trace["steps"] for src in s["source"]}
    want = {"recycling": {"recycled"}, "lookup": {"retrieved"}}.get(label, {"draft", "retrieved", "both"})
    assert sources == want, (label, sources)


@pytest.mark.parametrize("drafter", ["recycling", "lookup"])
def test_eos_stops_like_generate(drafter):
    pair = tiny_pair(drafter)
    eos = reference(pair.target, [0, 1], 12)[5]   # a token the target really emits
    pair.target.generation_config.eos_token_id = eos
    hits = 0
    for start in range(12):
        prompt = [start, start + 1, start, start + 1]
        ref = reference(pair.target, prompt, 40)
        trace = run(pair, "", DecodeConfig(max_new_tokens=40, nodes=10, method="tr-static"), prompt_ids=prompt)
        assert trace["output_ids"] == ref
        hits += eos in ref
    assert hits > 0, "no prompt reached EOS: the check would be vacuous"


# ---------------------------------------------------------------- Token Recycling

def test_table_keeps_each_tokens_top_k_and_its_last_row():
    table = RecyclingTable(vocab_size=20)
    logits = torch.randn(3, 20)
    table.update([4, 7, 4], logits)                       # token 4 is scored twice: the later row wins
    ids, q = table.lookup([4, 7, 5, 99])
    want = torch.topk(torch.softmax(logits[2], -1), K)
    assert ids[0].tolist() == want.indices.tolist()
    assert torch.allclose(q[0], want.values, atol=2e-3)    # stored as float16
    assert ids[1].tolist() == torch.topk(logits[1], K).indices.tolist()
    assert q[2].sum() == 0 and q[3].sum() == 0             # never seen / out of the vocabulary: no children
    assert table.rows_filled() == 2
    assert RecyclingTable(49152).nbytes < 3 * 2**20        # the bundled vocabulary: under a few MB


def test_recycling_learns_from_every_row_the_target_scored(monkeypatch):
    """Each verification hands the table the root and every node, rejected ones included, with the
    target's logits for each; a rejected node's row is then the target's own top-K after it."""
    pair = tiny_pair("recycling", vocab=48)
    seen = []
    real = RecyclingTable.update

    def spy(self, tokens, logits):
        seen.append((list(tokens), logits.clone()))
        real(self, tokens, logits)

    monkeypatch.setattr(RecyclingTable, "update", spy)
    prompt = [5, 6, 7, 5, 6]
    trace = run(pair, "", DecodeConfig(method="opt-tree", nodes=12, threshold=0.0, max_depth=3,
                                       max_new_tokens=12), prompt_ids=prompt)
    assert seen[0][0] == prompt[:-1]                      # the prompt's rows fill the table first
    committed = list(prompt)
    checked = 0
    for step, (tokens, logits) in zip(trace["steps"], seen[1:]):
        assert tokens == [committed[-1], *step["tokens"]] and logits.shape[0] == len(tokens)
        for i in set(range(len(step["tokens"]))) - set(step["accepted"]):   # rejected nodes
            path = []
            node = i
            while node != -1:
                path.insert(0, step["tokens"][node])
                node = step["parents"][node]
            with torch.no_grad():
                own = pair.target(input_ids=torch.tensor([committed + path])).logits[0, -1]
            assert torch.topk(own, K).indices.tolist() == torch.topk(logits[i + 1], K).indices.tolist()
            checked += 1
        committed += step["committed"]
    assert checked > 0, "no rejected node: the check would be vacuous"
    assert len(seen) == 1 + len(trace["steps"])


@pytest.mark.parametrize("kind,retrieval,method", [("recycling", "off", "opt-tree"), ("eagle", "off", "opt-tree"),
                                                   ("eagle", "on", "opt-tree"), ("classic", "off", "opt-tree"),
                                                   ("classic", "off", "ar")])
def test_the_prefill_computes_the_prompts_logits_only_for_a_drafter_that_reads_them(kind, retrieval, method,
                                                                                    monkeypatch):
    """Token Recycling reads every prompt row; the model drafters (fused or not) and AR read none, so their
    prefill keeps only the last position's logits. Either way the output is the target's."""
    pair, rows, real = tiny_pair(kind), [], TargetState.prefill
    load_or_measure(pair)       # the cost curve's own draft forwards happen before the hooks, not in the run

    def prefill(self):
        hook = pair.target.register_forward_hook(lambda m, args, out: rows.append(out.logits.shape[1]))
        try:
            real(self)
        finally:
            hook.remove()

    monkeypatch.setattr(TargetState, "prefill", prefill)
    drafted = []   # the classic draft reads the whole prompt at its first step, and only its last row's logits
    hook = pair.draft_model.register_forward_hook(lambda m, args, out: drafted.append(out.logits.shape[1])) \
        if kind == "classic" else None
    prompt = [5, 6, 7, 5, 6, 8, 9]
    try:
        trace = run(pair, "", DecodeConfig(method=method, nodes=8, max_new_tokens=10, retrieval=retrieval),
                    prompt_ids=prompt)
    finally:
        if hook is not None:
            hook.remove()
    assert rows == [len(prompt) - 1 if kind == "recycling" else 1]
    assert drafted[:1] == ([1] if kind == "classic" and method != "ar" else [])
    assert trace["output_ids"] == reference(pair.target, prompt, 10)


def test_last_logits_only_asks_nothing_of_a_model_without_logits_to_keep():
    class Plain(torch.nn.Module):
        def forward(self, input_ids, past_key_values=None, use_cache=False, output_hidden_states=False):
            return input_ids

    assert last_logits_only(Plain()) == {} and last_logits_only(tiny_pair("eagle").target) == {"logits_to_keep": 1}


def test_recycling_tree_is_read_from_the_table():
    pair = tiny_pair("recycling", vocab=48)
    table = RecyclingTable(48)
    drafter = make_drafter(pair, DecodeConfig(method="tr-static"), DraftContext(table=table))
    assert isinstance(drafter, RecyclingDrafter) and drafter.table is table
    table.update([9], torch.arange(48, dtype=torch.float32)[None])   # after 9: 47, 46, 45, ...
    drafter.begin_step([1, 9])
    tokens, q = drafter.top_children(None, [-1], 3)
    assert tokens.tolist() == [[47, 46, 45]] and bool((q[0, :-1] >= q[0, 1:]).all())


def test_run_scope_starts_empty_and_session_scope_carries_the_table():
    pair = tiny_pair("recycling", vocab=48)
    cfg = DecodeConfig(method="tr-static", nodes=30, max_new_tokens=24)
    first = run(pair, "", cfg, prompt_ids=[3, 4, 5])
    assert _same_run(run(pair, "", cfg, prompt_ids=[3, 4, 5]), first)   # nothing carried from run to run
    table = RecyclingTable(48)
    a = run(pair, "", cfg, prompt_ids=[3, 4, 5], context=DraftContext(table=table))
    assert _same_run(a, first)                              # an empty session table = a fresh run
    filled = table.rows_filled()
    b = run(pair, "", cfg, prompt_ids=[3, 4, 5], context=DraftContext(table=table))
    assert b["output_ids"] == a["output_ids"]               # the output never changes ...
    assert [s["tokens"] for s in b["steps"]] != [s["tokens"] for s in a["steps"]]   # ... the trees do
    assert filled > 0 and table.rows_filled() >= filled
    empty = [s for s in first["steps"] if not s["tokens"] and "left to generate" not in s["stop_reason"]]
    assert empty and all(s["stop_reason"].startswith("the table holds no candidates") for s in empty)


def _same_run(x, y):
    return x["output_ids"] == y["output_ids"] and [s["tokens"] for s in x["steps"]] == [s["tokens"] for s in y["steps"]]


def test_template_is_prefix_closed_and_cut_by_budget_and_depth():
    assert len(TR_STATIC) == 80 == len(set(TR_STATIC))
    assert all(max(p) < K for p in TR_STATIC)
    for n in (1, 7, 33, 80):
        for depth in (1, 3, 10):
            paths = shape_paths("tr-static", n, depth)
            assert len(paths) <= n and all(len(p) <= depth for p in paths)
            assert all(p[:-1] in set(paths) for p in paths if len(p) > 1)   # connected
    assert len(shape_paths("tr-static", 500, 10)) == 80


# ---------------------------------------------------------------- retrieval and prompt lookup

def test_continuations_prefer_the_longest_ngram_and_recent_matches():
    text = [1, 2, 3, 9, 8, 5, 2, 3, 7, 6, 1, 2, 3]
    n, found = continuations(text, None, length=3, limit=4)
    assert n == 3 and found == [[9, 8, 5]]                   # "1 2 3" occurs once before the end
    n, found = continuations([5, 2, 3, 7, 4, 2, 3, 8, 9, 2, 3], None, length=2, limit=4)
    assert n == 2 and found == [[8, 9], [7, 4]]               # newest first
    corpus = np.array([9, 2, 3, 6, 6])
    n, found = continuations([5, 2, 3, 7, 4, 2, 3], corpus, length=2, limit=4)
    assert found == [[7, 4], [6, 6]]                          # the text first, then the corpus
    assert continuations([1, 2, 3], None, 3, 4) == (0, [])    # nothing repeats


def test_continuation_trie_merges_prefixes_and_shares_weight():
    trie = continuation_tree([[5, 6, 7], [5, 6, 8], [4]]).tree   # weights 1, 1/2, 1/3
    assert trie.tokens == [5, 4, 6, 7, 8] and trie.parents == [-1, -1, 0, 2, 2]
    assert trie.q[0] == pytest.approx(1.5 / (1.5 + 1 / 3)) and trie.q[2] == 1.0
    assert trie.q[3] == pytest.approx(1 / 1.5) and trie.rank == [0, 1, 0, 0, 1]


def test_lookup_proposes_what_followed_and_nothing_without_a_match():
    pair = tiny_pair("lookup", vocab=64)
    cfg = DecodeConfig(method="opt-tree", nodes=10, max_depth=4, max_new_tokens=5)   # 5: the depth is not capped
    step = run(pair, "", cfg, prompt_ids=[20, 21, 22, 23, 24, 20, 21])["steps"][0]
    assert step["tokens"] == [22, 23, 24, 20] and step["parents"] == [-1, 0, 1, 2]
    step = run(pair, "", cfg, prompt_ids=[20, 21, 30, 20, 22, 20])["steps"][0]
    assert sorted(step["tokens"][:2]) == [21, 22] and step["parents"][:2] == [-1, -1]   # two matches: a tree
    step = run(pair, "", cfg, prompt_ids=[1, 2, 3])["steps"][0]
    assert step["tokens"] == [] and step["stop_reason"].startswith("no earlier occurrence")  # a plain target step
    binary = run(pair, "", replace(cfg, method="binary"), prompt_ids=[1, 2, 3])["steps"][0]
    assert binary["tokens"] == [] and "nothing to propose" in binary["stop_reason"]   # not "static shape"


def test_corpus_file_is_read_and_checked(tmp_path):
    class Tok:
        def __call__(self, text, add_special_tokens=True):
            return {"input_ids": [len(w) for w in text.split()]}

    path = tmp_path / "c.txt"
    path.write_text("aa bbb c", encoding="utf-8")
    assert load_corpus(str(path), Tok()).tolist() == [2, 3, 1]
    path.write_text("  \n", encoding="utf-8")
    with pytest.raises(BadInput, match="empty"):
        load_corpus(str(path), Tok())
    with pytest.raises(BadInput, match="cannot read"):
        load_corpus(str(tmp_path / "missing.txt"), Tok())


def test_corpus_continuations_reach_the_tree():
    pair = tiny_pair("lookup", vocab=64)
    cfg = DecodeConfig(method="opt-tree", nodes=10, max_depth=3, max_new_tokens=4)
    corpus = np.array([50, 51, 52, 53, 54])
    step = run(pair, "", cfg, prompt_ids=[1, 2, 51], context=DraftContext(corpus=corpus))["steps"][0]
    assert step["tokens"] == [52, 53, 54]


def test_fusion_marks_sources_and_respects_the_budget():
    pair = tiny_pair("classic", vocab=64)
    prompt = [20, 21, 22, 23, 24, 25, 26, 20, 21]
    for nodes in (1, 3, 12):
        cfg = DecodeConfig(method="opt-tree", nodes=nodes, max_depth=6, max_new_tokens=7, retrieval="on")
        step = run(pair, "", cfg, prompt_ids=prompt)["steps"][0]
        assert len(step["tokens"]) <= nodes
        assert "retrieval:" in step["stop_reason"]
    assert "retrieval: 1 match of the last 2 tokens" in step["stop_reason"], step["stop_reason"]
    assert {"retrieved", "both"} & set(step["source"])
    plain = run(pair, "", DecodeConfig(method="opt-tree", nodes=12, max_depth=6, max_new_tokens=7),
                prompt_ids=prompt)["steps"][0]
    assert set(plain["source"]) == {"draft"}


def test_fused_trees_keep_the_last_steps_depth_cap_and_the_auto_budget_weighs_the_fused_candidates(monkeypatch):
    """Fusion adds retrieved nodes within the step's settings: never deeper than the tokens left allow.
    Under the auto budget the fused tree's size is the best expected tokens/s over the fused candidates:
    with each token costing 1 ms of a 10 ms forward, the random draft's own nodes do not pay, and the
    retrieved continuation (q 0.8 per token) does."""
    from opttree.engine import cost

    pair = tiny_pair("classic", vocab=64)
    prompt = [20, 21, 22, 23, 24, 25, 26, 20, 21]
    trace = run(pair, "", DecodeConfig(method="opt-tree", nodes=12, max_depth=6, max_new_tokens=3,
                                       retrieval="on"), prompt_ids=prompt)
    produced = 0
    for step in trace["steps"]:
        assert max(step["depth"], default=0) <= max(3 - produced - 1, 0)
        produced += len(step["committed"])
    real = cost.load_or_measure(pair)
    free = {"base_ms": 0.0, "points": [{**p, "best_ms": 0.0} for p in real["draft"]["points"]]}
    curve = {**real, "points": [{**p, "best_ms": 10.0 + p["tokens"]} for p in real["points"]], "draft": free,
             "longer": None}
    monkeypatch.setattr(cost, "load_or_measure", lambda pair, refresh=False, log=None: curve)
    auto = DecodeConfig(method="opt-tree", nodes=0, max_depth=6, max_new_tokens=12)
    plain = run(pair, "", auto, prompt_ids=prompt)["steps"][0]
    fused = run(pair, "", replace(auto, retrieval="on"), prompt_ids=prompt)["steps"][0]
    assert len(plain["tokens"]) <= 2 and fused["source"].count("retrieved") + fused["source"].count("both") >= 4
    assert len(fused["tokens"]) > len(plain["tokens"]) and fused["tokens"][:4] == [22, 23, 24, 25]
    # the step records the fused choice beside the draft's own (the views show both)
    assert fused["auto"]["fused_nodes"] == len(fused["tokens"]) and fused["auto"]["fused_tokens_per_s"] > 0
    assert fused["auto"]["chosen_nodes"] == len(plain["tokens"])


def test_tree_temperature_does_not_apply_without_draft_logits():
    trace = run(tiny_pair("recycling"), "", DecodeConfig(tree_temperature=0.5, max_new_tokens=2), prompt_ids=[1, 2])
    assert trace["meta"]["tree_temperature"] == 1.0      # meta records the value used: none


def test_retrieval_needs_a_draft_model():
    with pytest.raises(BadInput, match="retrieval fusion"):
        run(tiny_pair("recycling"), "", DecodeConfig(retrieval="on", max_new_tokens=2), prompt_ids=[1, 2])
    # AR has no tree: the setting is ignored there.
    assert run(tiny_pair("recycling"), "", DecodeConfig(method="ar", retrieval="on", max_new_tokens=2),
               prompt_ids=[1, 2])["output_ids"]


def test_retrieval_auto_fuses_wherever_a_draft_model_drafts_and_stays_lossless():
    """retrieval = "auto" (the app's default) fuses for a prompt long or short wherever a draft model
    drafts, and not for a drafter without a draft model or AR; the meta records what the run did and that
    it was asked "auto"; the output is the target's greedy output either way."""
    pair = tiny_pair("classic", vocab=64)
    long_prompt, short_prompt = [20, 21, 22, 23, 24, 25, 26, 20, 21], [20, 21, 22]
    cfg = DecodeConfig(method="opt-tree", nodes=12, max_depth=6, max_new_tokens=7, retrieval="auto")
    fused = run(pair, "", cfg, prompt_ids=long_prompt)
    assert fused["meta"]["retrieval"] == "on" and fused["meta"]["retrieval_asked"] == "auto"
    assert "retrieval:" in fused["steps"][0]["stop_reason"]
    assert fused["output_ids"] == run(pair, "", replace(cfg, method="ar"), prompt_ids=long_prompt)["output_ids"]
    on = run(pair, "", replace(cfg, retrieval="on"), prompt_ids=long_prompt)
    assert [s["tokens"] for s in fused["steps"]] == [s["tokens"] for s in on["steps"]]   # auto = on here
    short = run(pair, "", cfg, prompt_ids=short_prompt)
    assert short["meta"]["retrieval"] == "on" and short["meta"]["retrieval_asked"] == "auto"
    assert short["output_ids"] == run(pair, "", replace(cfg, method="ar"), prompt_ids=short_prompt)["output_ids"]
    free = run(tiny_pair("recycling"), "", replace(cfg, method="tr-static"), prompt_ids=long_prompt)
    assert free["meta"]["retrieval"] == "off"          # no draft model to prune with: auto never raises
    assert run(pair, "", replace(cfg, method="ar"), prompt_ids=long_prompt)["meta"]["retrieval"] == "off"
    validate_trace(fused)


def test_fusion_reads_the_heads_draft_vocabulary_rows_not_full_rows(monkeypatch):
    """With a reduced draft vocabulary the feature head answers fusion's (q, rank) of each retrieved token
    from its draft-vocabulary rows: the same numbers the full-vocabulary rows give (a token outside the
    draft vocabulary has q 0 in both), the same top-k, and no full row is made when the trace records none.
    With the full rows' answers the fused trees are the same, and the output is the target's either way."""
    from opttree.drafters.base import Drafter, odds
    from opttree.drafters.feature_head import FeatureHeadDrafter
    from opttree.nets.feature_head import FeatureHead

    pair = tiny_pair("eagle", vocab=64)
    head = FeatureHead({**pair.draft_model.config, "draft_vocab": 40}).eval().requires_grad_(False)
    perm = torch.randperm(64, generator=torch.Generator().manual_seed(3)).tolist()
    kept = torch.tensor([t for t in perm if t not in (22, 23)][:40])    # the prompt repeats 22 and 23
    head.load_state_dict({**pair.draft_model.state_dict(), "vocab_ids": kept})
    pair.draft_model = head
    prompt = [20, 21, 22, 23, 24, 25, 26, 20, 21, 22, 23, 30, 31, 20, 21]
    cfg = DecodeConfig(method="opt-tree", nodes=12, max_depth=6, max_new_tokens=10, retrieval="on")
    fast, asked_outside, full_rows = FeatureHeadDrafter.top_children_and_odds, [], []

    def checked(self, tree, nodes, k, asked):
        tokens, q, found = fast(self, tree, nodes, k, asked)
        feats = (self.root_feature[None] if self.asks_for_root(nodes)
                 else torch.stack([self.node_feature[n] for n in nodes]))
        full = self.probs(self._logits(feats))      # the full rows, from the features the layer computed
        for mine, theirs in zip(found, odds(full, asked)):
            assert [r for _, r in mine] == [r for _, r in theirs]
            assert [q_ for q_, _ in mine] == pytest.approx([q_ for q_, _ in theirs], abs=1e-6)
        top = torch.topk(full, tokens.shape[-1], dim=-1)
        assert torch.equal(tokens, top.indices) and torch.allclose(q, top.values, atol=1e-6)
        asked_outside.extend(t for toks in asked for t in toks if t not in set(kept.tolist()))
        return tokens, q, found

    monkeypatch.setattr(FeatureHeadDrafter, "top_children_and_odds", checked)
    whole = FeatureHeadDrafter.distributions
    monkeypatch.setattr(FeatureHeadDrafter, "distributions", lambda self, *a: full_rows.append(1) or whole(self, *a))
    fused = run(pair, "", cfg, prompt_ids=prompt, record_target=False)
    assert asked_outside and not full_rows      # retrieval asked for a token the draft cannot propose
    assert any({"retrieved", "both"} & set(s["source"]) for s in fused["steps"])
    monkeypatch.undo()
    monkeypatch.setattr(FeatureHeadDrafter, "top_children_and_odds", Drafter.top_children_and_odds)
    slow = run(pair, "", cfg, prompt_ids=prompt, record_target=False)   # (q, rank) from full rows
    assert [(s["tokens"], s["parents"], s["source"]) for s in slow["steps"]] == \
        [(s["tokens"], s["parents"], s["source"]) for s in fused["steps"]]
    assert fused["output_ids"] == run(pair, "", replace(cfg, method="ar"), prompt_ids=prompt)["output_ids"]


# ---------------------------------------------------------------- the bundled model

SUMMARY_PROMPT = ("Summarize this text in one sentence.\n\nThe Great Barrier Reef is the world's largest coral reef "
                  "system, located in the Coral Sea off the coast of Queensland, Australia. It is built by billions "
                  "of tiny organisms known as coral polyps.")


def test_bundled_smollm_matches_generate(smollm):
    """The real target: Token Recycling, prompt lookup, and the trained head with retrieval fusion."""
    from opttree.decoding.prompts import encode_prompt
    from opttree.drafters.registry import KINDS
    from opttree.models.draft_assets import load_feature_head

    ids = encode_prompt(smollm.tokenizer, SUMMARY_PROMPT)
    ref = reference(smollm.target, ids, 24)
    head = replace(smollm, drafter_kind="eagle",
                   draft_model=load_feature_head(str(KINDS["eagle"].bundled_path), smollm.target))
    runs = [(replace(smollm, drafter_kind="recycling"), "tr-static", "off"),
            (replace(smollm, drafter_kind="lookup"), "opt-tree", "off"), (head, "opt-tree", "on")]
    for pair, method, retrieval in runs:
        cfg = DecodeConfig(method=method, nodes=20, max_depth=8, max_new_tokens=24, retrieval=retrieval)
        trace = run(pair, SUMMARY_PROMPT, cfg)
        assert trace["output_ids"] == ref, (pair.drafter_kind, retrieval)
        assert trace["summary"]["tau"] > 1.0, (pair.drafter_kind, retrieval)   # the drafts were used
