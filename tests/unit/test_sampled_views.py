"""What the views say about a sampled run (temperature > 0): the Compare table's match with AR, E(A) vs A's
groups, the run summary (the app's and the HTML export's), the step metrics and their expectations. Hand-made
data."""

from __future__ import annotations

import json
import re

from opttree.bench.harness import aggregate
from opttree.trace import summarize
from viz.compare_table import same_cell
from viz.drafters import sampled_at
from viz.html_export import standalone_html
from viz.metrics import run_summary, step_metrics
from viz.step_charts import ea_density, ea_points

SAMPLED = {"temperature": 0.7, "top_k": 20, "top_p": 0.9, "seed": 3}


def make_step(parents, q, accepted=(), p_target=None):
    """A hand-made step: p̂ is the product of q along the path; `p_target` the target's p of each node."""
    n, depth, p_hat = len(parents), [], []
    for i, p in enumerate(parents):
        depth.append(1 if p == -1 else depth[p] + 1)
        p_hat.append(q[i] * (1.0 if p == -1 else p_hat[p]))
    step = {"tokens": list(range(n)), "texts": [f"w{i}" for i in range(n)], "parents": list(parents),
            "depth": depth, "q": list(q), "p_hat": p_hat, "rank": [0] * n, "source": ["draft"] * n,
            "accepted": list(accepted), "accept_length": len(accepted), "bonus_token": 99, "bonus_text": " end",
            "rejected": None, "committed": [*accepted, 99], "expected_accept": sum(p_hat), "ea_by_depth": [0.0],
            "stop_reason": "test", "draft_ms": 1.0, "build_ms": 1.0, "verify_ms": 1.0}
    return {**step, "p_target": list(p_target)} if p_target is not None else step


def make_trace(steps, **meta):
    return {"version": 1, "prompt": "Hi", "output_ids": [], "output_text": "", "steps": steps,
            "summary": summarize(steps, sum(len(s["committed"]) for s in steps), 1.0),
            "meta": {"method": "opt-tree", "drafter": "eagle", "draft": "head", "nodes": 10, **meta}}


def bench_row(method: str, prompt: str, output: list[int]) -> dict:
    return {"method": method, "prompt_id": prompt, "new_tokens": len(output), "steps": 2, "wall_s": 1.0,
            "tokens_per_s": float(len(output)), "tau": len(output) / 2, "output_ids": output}


def test_a_sampled_comparison_checks_each_output_against_ar_drawn_with_the_same_seed():
    """Every run of a comparison draws with the same seed, and each committed token costs one draw, so a sampled
    tree run commits AR's tokens (docs/how-it-works.md). The table said "n/a (sampled: each run draws its own
    text)", which is not so (failed before: no match was computed at T > 0); transformers' own sampling draws
    differently, so its rows stay unchecked."""
    ar = {p: bench_row("ar", p, [1, 2, 3]) for p in ("a", "b")}
    tree = [bench_row("opt-tree@10", "a", [1, 2, 3]), bench_row("opt-tree@10", "b", [1, 2, 3])]
    assert aggregate(tree, ar, [], greedy=False)["exact_match"] == 1.0
    parted = [tree[0], bench_row("opt-tree@10", "b", [1, 2, 4])]
    assert aggregate(parted, ar, [], greedy=False)["exact_match"] == 0.5
    hf = [bench_row("hf-assisted", p, [1, 2, 5]) for p in ("a", "b")]
    assert aggregate(hf, ar, [], greedy=False)["exact_match"] is None
    assert aggregate(hf, ar, [], greedy=True)["exact_match"] == 0.0
    row = {"budget": 10, "prompts": 2}
    assert same_cell({**row, "exact_match": 1.0}, greedy=False) == "yes (2/2, same seed)"
    assert same_cell({**row, "exact_match": 0.5}, greedy=False) == "NO (1/2, same seed)"
    assert same_cell({**row, "exact_match": 1.0}, greedy=True) == "yes (2/2)"
    assert "its own text" not in same_cell({**row, "exact_match": None}, greedy=False)


def test_e_a_vs_a_keeps_greedy_and_sampled_runs_of_one_drafter_apart():
    """Sampled, a node is accepted with the target's probability of its path; greedy, when it is the target's
    argmax: one drafter's p̂ calibrate differently under the two, so a session mixing them gets a group for each
    (failed before: both were one "opt-tree · EAGLE head" group)."""
    step = make_step([-1, 0], [0.8, 0.5], accepted=[0])
    greedy, sampled = make_trace([step], temperature=0.0), make_trace([step], **SAMPLED)
    _, stats = ea_density([ea_points(greedy), ea_points(sampled), ea_points(make_trace([step]))])
    assert set(stats) == {"opt-tree · EAGLE head", "opt-tree · EAGLE head · sampled at T = 0.7, top-k 20, top-p 0.9"}
    assert stats["opt-tree · EAGLE head"]["steps"] == 2       # a trace without a temperature is a greedy one


def test_the_run_summary_and_the_html_export_say_a_run_was_sampled_and_its_seed():
    """A handout of a sampled run (the HTML export) must say the text is one draw and how to redraw it (failed
    before: neither the app's summary nor the export named the temperature, filters or seed)."""
    step = make_step([-1], [0.8], accepted=[0])
    said = "sampled at T = 0.7, top-k 20, top-p 0.9, seed 3"
    assert said in run_summary(make_trace([step], **SAMPLED))
    assert said in standalone_html(make_trace([step], **SAMPLED))
    assert "sampled at T = 1, seed 0" in run_summary(make_trace([step], temperature=1.0, top_k=0, top_p=1.0, seed=0))
    assert "sampled" not in run_summary(make_trace([step], temperature=0.0, seed=3))


def test_the_html_export_shows_the_apps_step_metrics():
    """The export's per-step table said "(+1 bonus)" on a step EOS ended inside its accepted path and did not
    say that prompt lookup's E(A) is a ranking score (failed before: it kept a copy of the app's rows)."""
    step = make_step([-1, 0, 1], [0.9, 0.8, 0.7], accepted=[0, 1, 2])
    step["committed"], step["accept_length"] = [0, 1], 2          # EOS was the second accepted token
    page = standalone_html(make_trace([step], drafter="lookup", draft="prompt lookup"))
    raw = re.search(r'<script id="run-data" type="application/json">(.*?)</script>', page, re.S).group(1)
    rows = json.loads(raw.replace("<\\/", "</"))["metrics"][0]
    assert "2 (3 accepted; EOS or the token limit ended the run first)" in rows and "+1 bonus" not in rows
    assert "ranking score" in rows


def test_sampled_step_metrics_give_the_expectation_under_the_target_too():
    """Sampled, the target-sample rule accepts a node with the target's probability of its path (the product of
    p_target along it), so Σ of those is the step's exact expected accepted length; Σ p̂ is the draft's estimate
    of it (failed before: the metrics showed only Σ p̂, called "expected accepted"). Greedy p_target is a
    stand-in (the softmax at T = 1), so no such row."""
    step = make_step([-1, -1, 0], [0.6, 0.3, 0.5], accepted=[0], p_target=[0.5, 0.2, 0.4])
    md = step_metrics(make_trace([step], **SAMPLED), 0)
    assert re.search(r"\| expected accepted under the target's p[^|]*\| 0\.90 \|", md)     # 0.5 + 0.2 + 0.5·0.4
    assert "| E(A) = Σ p̂ (the draft's expected accepted) | 1.20 |" in md
    assert "under the target's p" not in step_metrics(make_trace([step], temperature=0.0), 0)
    older = {k: v for k, v in step.items() if k != "p_target"}           # a trace without the target's side
    assert "under the target's p" not in step_metrics(make_trace([older], **SAMPLED), 0)


def test_the_sampling_settings_read_as_written_whatever_an_imported_meta_holds():
    """An imported meta may hold a whole float top-k, a bool or a string: a top-k reads as a count ("top-k 20",
    not "top-k 20.0"), and what is not a finite number is left out."""
    assert sampled_at({"temperature": 0.7, "top_k": 20.0, "top_p": 0.9}) == "sampled at T = 0.7, top-k 20, top-p 0.9"
    assert sampled_at({"temperature": 1, "top_k": True, "top_p": "0.5"}) == "sampled at T = 1"
    assert sampled_at({"temperature": float("nan")}) == sampled_at({"temperature": 0}) == sampled_at(None) == ""


def test_e_a_vs_a_keeps_runs_drafted_at_different_tree_temperatures_apart():
    """The tree temperature rescales q before p̂ is taken, so one drafter at two tree temperatures holds two
    beliefs: sampled at the run's T its E(A) overstates A 2-3× where at 1 it is near (benchmarks/
    sampling_tree_temperature.md). A session mixing them gets a group for each, its panel naming the tree
    temperature on a line of its own (failed before: both were one "… · sampled at T = 0.7" group)."""
    step = make_step([-1, 0], [0.8, 0.5], accepted=[0])
    plain = make_trace([step], **SAMPLED, tree_temperature=1.0)
    sharp = make_trace([step], **SAMPLED, tree_temperature=0.5)
    fig, stats = ea_density([ea_points(plain), ea_points(sharp), ea_points(make_trace([step], **SAMPLED))])
    sampled = "opt-tree · EAGLE head · sampled at T = 0.7, top-k 20, top-p 0.9"
    assert set(stats) == {sampled, f"{sampled} · tree temperature 0.5"}
    assert stats[sampled]["steps"] == 2                  # a trace without a tree temperature drafted at 1
    titles = [a.text for a in fig.layout.annotations]
    assert any(t.endswith("<br>sampled at T = 0.7, top-k 20, top-p 0.9<br>tree temperature 0.5") for t in titles)
    assert all(t.startswith("opt-tree · EAGLE head: binned r") for t in titles)
