"""What the views say about a sampled run (temperature > 0): the Compare table's match with AR. Hand-made data."""

from __future__ import annotations

from opttree.bench.harness import aggregate
from viz.compare_table import same_cell


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
