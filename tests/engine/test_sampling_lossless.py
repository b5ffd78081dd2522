"""Speculative sampling is lossless: the first tokens are distributed exactly like the target's."""

import pytest
import torch
from reference import commits_the_ar_runs_sample
from scipy.stats import chisquare
from tiny import tiny_pair

from opttree.config import METHODS, DecodeConfig
from opttree.decoding.sampling import warp
from opttree.engine.speculative import run

V = 6
PROMPT = [1, 2, 3]


def exact_two_token_distribution(model, temperature, top_k, top_p, prompt=PROMPT):
    """P(t1, t2 | prompt) under the target's warped sampling, by enumeration."""
    with torch.no_grad():
        p1 = warp(model(input_ids=torch.tensor([prompt])).logits[0, -1], temperature, top_k, top_p)
        rows = torch.tensor([prompt + [t] for t in range(V)])
        p2 = warp(model(input_ids=rows).logits[:, -1], temperature, top_k, top_p)
    return (p1[:, None] * p2).flatten()


def chi_square_p(counts: torch.Tensor, expected: torch.Tensor) -> float:
    """p-value of observed counts against expected probabilities (rare cells pooled to >= 5)."""
    n = counts.sum()
    support = expected > 0
    assert counts[~support].sum() == 0, "sampled an outcome the target gives probability 0"
    exp, obs = expected[support] * n, counts[support]
    rare = exp < 5
    if rare.any():
        exp = torch.cat([exp[~rare], exp[rare].sum()[None]])
        obs = torch.cat([obs[~rare], obs[rare].sum()[None]])
    return float(chisquare(obs.numpy(), exp.numpy() * float(obs.sum() / exp.sum())).pvalue)


def two_token_counts(pair, prompt, runs: int = 1500, **settings):
    """How often each two-token output came out of `runs` OPT-Tree runs at T = 1 (seeds 0..runs-1),
    and the draft tokens the first steps accepted in all."""
    counts, accepted = torch.zeros(V * V), 0
    for seed in range(runs):
        cfg = DecodeConfig(method="opt-tree", nodes=8, threshold=0.0, max_depth=3, temperature=1.0,
                           max_new_tokens=2, seed=seed, **settings)
        trace = run(pair, "", cfg, prompt_ids=prompt)
        t1, t2 = trace["output_ids"]
        counts[t1 * V + t2] += 1
        accepted += trace["steps"][0]["accept_length"]
    return counts, accepted


def test_end_to_end_first_two_tokens_match_target():
    """Real models and the whole loop: OPT-Tree with a classic draft, T=1."""
    pair = tiny_pair("classic", vocab=V, scale=2.0)
    expected = exact_two_token_distribution(pair.target, 1.0, 0, 1.0)
    counts, accepted = two_token_counts(pair, PROMPT)
    assert accepted > 300, "drafts were (almost) never accepted: the tree would not be exercised"
    assert chi_square_p(counts, expected) > 1e-3


# A prompt that repeats itself, so prompt lookup and retrieval find continuations to propose, and whose
# last token (the first root) was scored in the prefill, so Token Recycling's table has its row.
REPEATING = [1, 2, 3, 1, 2]


@pytest.fixture()
def one_thread():
    # 1500 tiny-model runs: one thread avoids thread-sync stalls on a shared machine.
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


@pytest.mark.parametrize("drafter,extra", [("recycling", {}), ("lookup", {}), ("classic", {"retrieval": "on"})],
                         ids=["recycling", "lookup", "classic+retrieval"])
def test_drafts_without_a_trained_draft_stay_lossless(drafter, extra, one_thread):
    """Token Recycling, prompt lookup and retrieval fusion only propose tokens: the whole loop at T = 1
    still commits the target's exact distribution."""
    pair = tiny_pair(drafter, vocab=V, scale=2.0)
    expected = exact_two_token_distribution(pair.target, 1.0, 0, 1.0, REPEATING)
    counts, accepted = two_token_counts(pair, REPEATING, **extra)
    assert accepted > 100, "drafts were (almost) never accepted: the tree would not be exercised"
    assert chi_square_p(counts, expected) > 1e-3


def synthetic_logits(context: tuple[int, ...]) -> torch.Tensor:
    g = torch.Generator().manual_seed(hash(context) % (2**31))
    return torch.randn(V, generator=g) * 1.5


@pytest.mark.parametrize("temperature,top_k,top_p", [(1.0, 0, 1.0), (0.7, 0, 0.8), (1.5, 3, 1.0)])
@pytest.mark.parametrize("shape", ["wide", "deep"])
def test_acceptance_rule_is_lossless(temperature, top_k, top_p, shape):
    """The verifier's walk alone, many samples: committed tokens follow the target exactly,
    whichever tree the draft proposed (a rejected first token continues from a fresh root)."""
    from opttree.decoding.sampling import TokenPicker
    from opttree.decoding.verify import accept
    from opttree.trees.draft_tree import ROOT, DraftTree

    tree = DraftTree()
    if shape == "wide":  # three root children, one with two children of its own
        for t in (0, 1, 2):
            tree.add(ROOT, t, 0.3, t)
        tree.add(0, 3, 0.5, 0)
        tree.add(0, 1, 0.4, 1)
    else:  # a single chain of three
        tree.add(ROOT, 2, 0.6, 0)
        tree.add(0, 2, 0.6, 0)
        tree.add(1, 5, 0.6, 0)
    logits = torch.stack([synthetic_logits(())] + [
        synthetic_logits(tuple(tree.tokens[a] for a in tree.path(i))) for i in range(len(tree))])
    pick = TokenPicker(temperature, top_k, top_p, seed=1)
    counts = torch.zeros(V * V)
    for _ in range(20000):
        path, bonus, _ = accept(tree, logits, pick)
        out = [tree.tokens[a] for a in path] + [bonus]
        if len(out) == 1:  # the next step would start from the bonus token as its root
            out.append(pick(synthetic_logits((out[0],))))
        counts[out[0] * V + out[1]] += 1
    p1 = warp(synthetic_logits(()), temperature, top_k, top_p)
    p2 = torch.stack([warp(synthetic_logits((t,)), temperature, top_k, top_p) for t in range(V)])
    assert chi_square_p(counts, (p1[:, None] * p2).flatten()) > 1e-3


def test_same_seed_same_output_and_greedy_ignores_seed():
    pair = tiny_pair("classic", vocab=32, scale=2.0)
    a = run(pair, "", DecodeConfig(temperature=1.0, seed=5, max_new_tokens=20), prompt_ids=PROMPT)
    b = run(pair, "", DecodeConfig(temperature=1.0, seed=5, max_new_tokens=20), prompt_ids=PROMPT)
    c = run(pair, "", DecodeConfig(temperature=1.0, seed=6, max_new_tokens=20), prompt_ids=PROMPT)
    assert a["output_ids"] == b["output_ids"] and a["output_ids"] != c["output_ids"]
    # Greedy: two seeds that give different samples above give the same text, the target's argmax.
    greedy = [run(pair, "", DecodeConfig(temperature=0.0, seed=seed, max_new_tokens=20), prompt_ids=PROMPT)
              for seed in (5, 6)]
    assert greedy[0]["output_ids"] == greedy[1]["output_ids"]
    with torch.no_grad():
        ref = pair.target.generate(torch.tensor([PROMPT]), attention_mask=torch.ones(1, len(PROMPT), dtype=torch.long),
                                   max_new_tokens=20, do_sample=False)[0, len(PROMPT):].tolist()
    assert greedy[0]["output_ids"] == ref


@pytest.mark.parametrize("drafter", ["classic", "eagle", "fused", "early-exit"])
@pytest.mark.parametrize("method", [m for m in METHODS if m != "ar"])
def test_same_seed_gives_the_ar_runs_sample(method, drafter):
    """Each committed token costs exactly one draw from the run's generator, so with the same seed a
    sampled tree run commits the AR run's tokens, whatever the tree accepted at each step."""
    commits_the_ar_runs_sample(tiny_pair(drafter, vocab=32, scale=2.0, eos=7), method, PROMPT)


@pytest.mark.parametrize("method", ["opt-tree", "eagle-static"])
def test_same_seed_gives_the_ar_runs_sample_on_the_bundled_model(smollm, method):
    """The real model (fp32, CPU) drafting for itself: sampled tree runs equal the AR run."""
    from opttree.models.loading import ModelPair

    self_draft = ModelPair(smollm.target, smollm.tokenizer, "smollm", "classic", smollm.target, "self")
    for prompt, seed in [("Write a haiku about the sea.", 0), ("Name three colours.", 7)]:
        common = dict(max_new_tokens=20, seed=seed, temperature=0.8)
        ar = run(smollm, prompt, DecodeConfig(method="ar", **common))
        tree = run(self_draft, prompt, DecodeConfig(method=method, nodes=12, max_depth=5, **common))
        assert tree["output_ids"] == ar["output_ids"], (prompt, seed)
        assert sum(s["accept_length"] for s in tree["steps"]) > 0


@pytest.mark.parametrize("drafter,retrieval", [("recycling", "off"), ("lookup", "off"), ("classic", "on")],
                         ids=["recycling", "lookup", "classic+retrieval"])
@pytest.mark.parametrize("method", [m for m in METHODS if m != "ar"])
def test_same_seed_gives_the_ar_runs_sample_without_a_trained_draft(method, drafter, retrieval):
    """Token Recycling, prompt lookup and retrieval fusion under every tree method (the Token Recycling
    template and Sequoia's tree included), sampled: the same seed commits the AR run's tokens."""
    commits_the_ar_runs_sample(tiny_pair(drafter, vocab=32, scale=2.0, eos=7), method, REPEATING, retrieval=retrieval)
