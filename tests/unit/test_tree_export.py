"""Export strings for serving engines: vLLM's config (a chain for vLLM ≥ 0.21, speculative_token_tree for
≤ 0.20) and SGLang's flags parse back, a vLLM tree string turns into the engine's own tree through the
static builder, and what an engine cannot take is refused with the reason."""

import json
from collections import Counter

import pytest
import torch

from opttree.errors import BadInput
from opttree.trees.draft_tree import ROOT
from opttree.trees.export import (
    EXPORT_FORMATS,
    check_paths,
    engine_export,
    frequent_paths,
    held_note,
    parse_sglang_args,
    parse_vllm_config,
    parse_vllm_tree,
    rank_paths,
    sglang_flags,
    sglang_note,
    static_paths,
    uniform_per_level,
    vllm_config,
    vllm_json,
    vllm_tree,
)
from opttree.trees.sequoia import optimal_tree
from opttree.trees.static import EAGLE_25, build_static

VOCAB = 12


def expand(tree, nodes, k):
    """Every node proposes tokens by rank with q decreasing in rank (never zero)."""
    q = torch.linspace(0.5, 0.01, VOCAB, dtype=torch.float64)[:k]
    tokens = torch.stack([torch.roll(torch.arange(VOCAB), (0 if n == ROOT else tree.tokens[n] + 1)) [:k]
                          for n in nodes])
    return tokens, q.expand(len(nodes), -1)


def engine_paths(tree):
    """The rank path of each node of a built DraftTree, as a step record would give them."""
    return rank_paths({"parents": tree.parents, "rank": tree.rank})


def test_the_vllm_string_is_level_by_level_and_counts_its_nodes():
    assert vllm_tree([(0, 0), (1,), (0,)]) == "[(0,), (1,), (0, 0)]"
    spec = vllm_config([(0,), (1,), (0, 0), (1, 0)], "eagle", tree=True)
    assert spec == {"method": "eagle", "num_speculative_tokens": 4,
                    "speculative_token_tree": "[(0,), (1,), (0, 0), (1, 0)]"}


def test_current_vllm_gets_a_chain_as_deep_as_the_tree():
    """vLLM ≥ 0.21 has no speculative_token_tree (PR #42121) and forbids extra keys: the default export is the
    `--speculative-config` object itself (no wrapper) with a chain as deep as the tree (failed before: the
    tree key under a "speculative_config" wrapper)."""
    spec = json.loads(vllm_json(EAGLE_25, "eagle"))
    assert spec == {"method": "eagle", "num_speculative_tokens": 5}
    assert parse_vllm_config(vllm_json(EAGLE_25, "eagle")) == ("eagle", [(0,), (0, 0), (0, 0, 0), (0,) * 4, (0,) * 5])
    out = engine_export(EAGLE_25, "vllm", "eagle")
    assert json.loads(out.text) == spec and "PR #42121" in out.notes[0] and "SGLang" in out.notes[0]
    assert '"model"' in out.notes[1]                           # an EAGLE head is a draft vLLM must load
    lookup = engine_export(EAGLE_25, "vllm", "lookup")
    assert json.loads(lookup.text)["method"] == "ngram" and not any('"model"' in n for n in lookup.notes)
    assert "5 draft tokens a step, the tree's depth" in out.notes[0]
    # A one-level tree, one draft token a step in the singular (failed before: "1 draft tokens a step").
    assert "): 1 draft token a step, the tree's depth" in engine_export([(0,), (1,)], "vllm", "eagle").notes[0]


def test_the_vllm_020_tree_is_refused_where_that_vllm_cannot_draft_it():
    """vLLM ≤ 0.20 drafts one child count per level with its EAGLE proposer under TREE_ATTN: an uneven tree or
    another method is refused with the reason (failed before: exported, with at most a note)."""
    assert set(EXPORT_FORMATS) == {"vllm", "vllm-tree", "sglang"}
    binary = static_paths("binary", 6, 10)
    out = engine_export(binary, "vllm-tree", "eagle")
    assert parse_vllm_config(out.text) == ("eagle", binary) and "TREE_ATTN" in " ".join(out.notes)
    with pytest.raises(BadInput, match="one child count per level"):
        engine_export(EAGLE_25, "vllm-tree", "eagle")
    for kind in ("classic", "lookup"):
        with pytest.raises(BadInput, match="only with method 'eagle'"):
            engine_export(binary, "vllm-tree", kind)
    for fmt in EXPORT_FORMATS:
        with pytest.raises(BadInput, match="no speculative"):
            engine_export(binary, fmt, "early-exit")
        with pytest.raises(BadInput, match="empty tree"):
            engine_export([], fmt, "eagle")


def test_sglang_algorithm_follows_the_drafter():
    """EAGLE for the feature head, STANDALONE for a classic draft, NGRAM (no steps or EAGLE top-k) for lookup
    (failed before: always EAGLE's flags, with no algorithm)."""
    eagle, classic, lookup = (engine_export(EAGLE_25, "sglang", k) for k in ("eagle", "classic", "lookup"))
    assert parse_sglang_args(eagle.text) == sglang_flags(EAGLE_25) and "--speculative-algorithm EAGLE " in eagle.text
    assert parse_sglang_args(classic.text).algorithm == "STANDALONE" and "--speculative-eagle-topk 4" in classic.text
    assert "--speculative-num-steps" not in lookup.text and "--speculative-eagle-topk" not in lookup.text
    back = parse_sglang_args(lookup.text)
    assert (back.algorithm, back.draft_tokens, back.topk) == ("NGRAM", 26, 4)


def test_the_ngram_note_says_what_sglang_derives_from_the_breadth():
    """SGLang's `_handle_ngram` (python/sglang/srt/arg_groups/speculative_hook.py) sets its top-k to the trie's
    breadth and, unless --speculative-num-steps is given, the steps to N // breadth; a breadth above 1 with a page
    size above 1 only on flashinfer (failed before: the note said both flags "do not apply", and "1 branches")."""
    note = engine_export(EAGLE_25, "sglang", "lookup").notes[0]
    assert "do not apply" not in note and "the steps to 26 // 4 = 6" in note
    assert "--page-size above 1 only the flashinfer backend" in note
    single = engine_export([(0,)], "sglang", "lookup").notes[0]
    assert "1 drafted token (+ the root)" in single and "at most 1 branch per level" in single
    assert "--page-size" not in single                      # a breadth of 1 drafts no tree


def test_the_sglang_tree_note_names_the_attention_backends_that_draft_trees():
    """SGLang drafts a tree (top-k > 1) only on some attention backends: its table lists flashinfer, fa3 and triton,
    trtllm_mha is refused at start-up ("trtllm_mha backend only supports topk = 1") and a page size above 1 needs
    one of those three (failed before: the note did not say, so the flags failed on such a server)."""
    for kind in ("eagle", "classic"):
        note = engine_export(EAGLE_25, "sglang", kind).notes[0]
        assert "flashinfer, fa3 and triton" in note and "trtllm_mha refuses it" in note and "--page-size" in note
    chain = engine_export(static_paths("chain", 4, 10), "sglang", "eagle").notes[0]
    assert "trtllm_mha" not in chain                          # top-k 1 runs on every backend


def test_the_vllm_tree_line_says_what_older_vllm_reads_instead_of_the_flag():
    """vLLM's --attention-backend came with PR #26315; 0.11 and earlier pick a backend only from the
    VLLM_ATTENTION_BACKEND environment variable (their attention selector), where the flag is an unknown argument
    (failed before: the note gave only the flag for every vLLM ≤ 0.20)."""
    notes = " ".join(engine_export(static_paths("binary", 6, 10), "vllm-tree", "eagle").notes)
    assert "VLLM_ATTENTION_BACKEND=TREE_ATTN" in notes and "PR #26315" in notes
    assert "--attention-backend TREE_ATTN --speculative-config" in notes


def test_a_shape_smaller_than_asked_says_why():
    assert held_note("chain", 25, static_paths("chain", 25, 10), 10) == (
        "the chain shape holds 10 of the 25 nodes asked for (capped by the max depth 10).")
    assert "fixed 25-node" in held_note("eagle-static", 60, static_paths("eagle-static", 60, 10), 10)
    assert held_note("binary", 6, static_paths("binary", 6, 10), 10) is None


TREES = {"eagle-25": EAGLE_25, "binary": static_paths("binary", 15, 10), "chain": static_paths("chain", 6, 10),
         "sequoia": optimal_tree([0.3, 0.6, 0.05], 20, 5), "sequoia-60": optimal_tree([0.7, 0.1, 0.05, 0.02], 60, 10)}


@pytest.mark.parametrize("name", TREES)
def test_vllm_round_trip_into_the_engines_own_tree(name):
    paths = check_paths(TREES[name])
    if uniform_per_level(paths):
        assert parse_vllm_config(vllm_json(paths, "eagle", tree=True)) == ("eagle", paths)
    method, chain = parse_vllm_config(vllm_json(paths, "eagle"))
    assert method == "eagle" and len(chain) == max(len(p) for p in paths)
    tree, _ = build_static(expand, parse_vllm_tree(vllm_tree(paths)), len(paths))
    assert engine_paths(tree) == paths            # node i of the engine's tree is path i


@pytest.mark.parametrize("name", TREES)
def test_sglang_flags_parse_back_and_hold_the_tree(name):
    paths = check_paths(TREES[name])
    flags = sglang_flags(paths)
    assert parse_sglang_args(flags.args()) == flags
    assert parse_sglang_args("python -m sglang.launch_server --speculative-algorithm EAGLE " + flags.args()) == flags
    assert flags.steps == max(len(p) for p in paths) and flags.draft_tokens == len(paths) + 1
    # the tree fits SGLang's candidates: no level wider than top-k parents, no node with more than top-k children
    for d in range(1, flags.steps + 1):
        assert len({p[:-1] for p in paths if len(p) == d}) <= flags.topk
        assert all(p[-1] < flags.topk for p in paths)
    assert ("shape itself" in sglang_note(paths)) == (flags.topk > 1)   # top-k 1 drafts the chain itself


def test_sglang_note_says_a_chain_is_kept_whole_and_one_step_in_the_singular():
    """Top-k 1 drafts the draft's own top-token chain, exactly a chain's shape (failed before: the note said the
    shape is chosen per step by SGLang, each step "expanding the 1 best nodes with their 1 best children")."""
    note = sglang_note(static_paths("chain", 3, 10))
    assert "a chain" in note and "shape itself" not in note and "1 best" not in note and "3 draft steps" in note
    fan = sglang_note([(0,), (1,), (2,)])
    assert "1 draft step:" in fan and "the root's 3 best children" in fan and "each expanding" not in fan


def test_sglang_chain_keeps_its_rule_and_known_shapes():
    chain = sglang_flags([(0,), (0, 0), (0, 0, 0)])
    assert (chain.steps, chain.topk, chain.draft_tokens) == (3, 1, 4)   # top-k 1: draft tokens = steps + 1
    binary = sglang_flags(static_paths("binary", 6, 10))
    assert (binary.steps, binary.topk, binary.draft_tokens) == (2, 2, 7)
    eagle = sglang_flags(EAGLE_25)
    assert (eagle.steps, eagle.topk, eagle.draft_tokens) == (5, 4, 26)


def test_uniform_per_level():
    assert uniform_per_level(static_paths("binary", 6, 10)) and uniform_per_level(static_paths("chain", 4, 10))
    assert not uniform_per_level(static_paths("binary", 7, 10))    # one node of the last full level has a child
    assert not uniform_per_level(EAGLE_25)


@pytest.mark.parametrize("bad", [[(1,)], [(0,), (0, 1)], [(0,), (0,)], [(0,), ()], [(0,), (-1,)], [(0.0,)]])
def test_malformed_trees_are_refused(bad):
    with pytest.raises(ValueError):
        check_paths(bad)
    with pytest.raises(ValueError):
        parse_vllm_tree(str(bad))


def test_malformed_texts_are_refused():
    for text in ("[(0,), (1,)", "[[0], [1]]", "import os", "{}"):
        with pytest.raises(ValueError):
            parse_vllm_tree(text)
    good = json.loads(vllm_json([(0,), (1,)], "eagle", tree=True))
    good["num_speculative_tokens"] = 3
    with pytest.raises(ValueError, match="has 2 nodes"):
        parse_vllm_config(json.dumps(good))
    with pytest.raises(ValueError, match="missing"):
        parse_sglang_args("--speculative-num-steps 3")


def test_frequent_paths_keep_a_rank_tree_of_the_most_frequent():
    counts = Counter({(0,): 10, (1,): 6, (0, 0): 8, (0, 1): 1, (1, 0): 5, (2,): 2, (0, 0, 0): 7, (3, 0): 9})
    assert frequent_paths(counts, 4) == [(0,), (1,), (0, 0), (0, 0, 0)]
    # (3, 0) is frequent but its parent and elder siblings are rarer: it comes only after them
    six = frequent_paths(counts, 6)
    assert check_paths(six) == six and (3, 0) not in six
    reachable = [p for p in counts if p != (3, 0)]                     # (3,) never occurred: (3, 0) cannot hang
    assert frequent_paths(counts, 100) == check_paths(reachable)


def test_rank_paths_of_a_recorded_step():
    step = {"parents": [-1, -1, 0, 2, 1], "rank": [0, 1, 0, 1, 0]}
    assert rank_paths(step) == [(0,), (1,), (0, 0), (0, 0, 1), (1, 0)]
