"""OPT-Tree's static stand-in for a serving engine (`opttree export-tree --method opt-tree`): the static
tree nearest its adaptive ones, fitted over real runs, with what adaptivity is worth, measured. The
shapes and the pure path arithmetic (`static_paths`, `rank_paths`, `frequent_paths`) are trees/export.py.

OPT-Tree grows a new shape every step, which vLLM and SGLang cannot take. Its static stand-in is
the shape its trees share most: over OPT-Tree runs at budget n on held-out training prompts (never
the eval or final sets), count how often each rank path occurs in a verified tree, then keep the
n most frequent that stay a rank tree (each path after its parent and its elder sibling; a path
never occurs more often than its parent, so this is the n most frequent paths whenever sibling
counts are ordered too). `compare` decodes OPT-Tree and that static tree on the same prompts: τ
(robust) and tokens/s (their ratio, from the same interleaved run).
"""

from __future__ import annotations

from collections import Counter

from opttree.bench.harness import MethodRunner, warm_up
from opttree.config import DecodeConfig
from opttree.decoding.prompts import encode_prompt
from opttree.engine.speculative import run
from opttree.trees.export import frequent_paths, rank_paths

# Any static method carries a given shape (trees/methods.py: `paths` replaces its own).
STATIC_CARRIER = "eagle-static"


def fit_static(pair, questions: list[dict], cfg: DecodeConfig, log=None) -> tuple[list[tuple[int, ...]], dict]:
    """OPT-Tree at `cfg` over `questions`: its most frequent static shape and the fit's figures."""
    counts: Counter = Counter()
    steps = tokens = 0
    for i, q in enumerate(questions):
        trace = run(pair, q["turns"][0], cfg, record_target=False)
        for step in trace["steps"]:
            counts.update(rank_paths(step))
        steps += trace["summary"]["steps"]
        tokens += trace["summary"]["new_tokens"]
        if log:
            log(f"fit {i + 1}/{len(questions)}: {trace['summary']['steps']} steps")
    paths = frequent_paths(counts, cfg.nodes)
    covered = sum(counts[p] for p in paths) / max(1, sum(counts.values()))
    return paths, {"prompts": [q["question_id"] for q in questions], "steps": steps,
                   "tau": round(tokens / max(1, steps), 4), "distinct_paths": len(counts),
                   "share_of_opt_tree_nodes_covered": round(covered, 4)}


def compare(pair, questions: list[dict], cfg: DecodeConfig, paths, log=None) -> dict:
    """OPT-Tree and the static `paths` on the same prompts (interleaved, the order alternating, after the
    harness's warm-up of both on the first prompt): τ of each and OPT-Tree's tokens/s over the static tree's."""
    totals = {"opt-tree": [0, 0, 0.0], "static": [0, 0, 0.0]}    # tokens, steps, seconds
    runs = {"opt-tree": (cfg.method, {}), "static": (STATIC_CARRIER, {"paths": paths})}
    runner = MethodRunner(pair, cfg)
    encoded = [(q["turns"][0], encode_prompt(pair.tokenizer, q["turns"][0])) for q in questions]
    for _ in warm_up(runner, encoded[:1], list(runs.values()), cfg.max_new_tokens):
        pass
    for i, (text, ids) in enumerate(encoded):
        for name in (runs if i % 2 == 0 else list(runs)[::-1]):
            method, keywords = runs[name]
            row, _ = runner(method, text, ids, **keywords)
            totals[name][0] += row["new_tokens"]
            totals[name][1] += row["steps"]
            totals[name][2] += row["wall_s"]
        if log:
            log(f"compare {i + 1}/{len(questions)}")
    tau = {k: round(v[0] / max(1, v[1]), 4) for k, v in totals.items()}
    speed = {k: v[0] / v[2] if v[2] else 0.0 for k, v in totals.items()}
    return {"prompts": [q["question_id"] for q in questions], "nodes": cfg.nodes, "tau_opt_tree": tau["opt-tree"],
            "tau_static": tau["static"], "tau_gain": round(tau["opt-tree"] - tau["static"], 4),
            "speed_ratio_opt_tree_over_static": round(speed["opt-tree"] / speed["static"], 4)
            if speed["static"] else None}


def adaptivity_line(c: dict, nodes: int) -> str:
    """`compare`'s result in one line: τ of each with the gain signed as it is, and the speed ratio named as
    measured side by side in one interleaved run on this machine."""
    over = f" over {len(c['prompts'])} prompts" if c.get("prompts") else ""
    ratio = c["speed_ratio_opt_tree_over_static"]
    speed = (f"×{ratio} (one run on this machine, the two interleaved{over})" if ratio is not None else
             "not timed (the static tree's runs took no measurable time)")
    return (f"OPT-Tree τ {c['tau_opt_tree']} vs its static stand-in τ {c['tau_static']} at n = {nodes} "
            f"({c['tau_gain']:+}); OPT-Tree's speed / the static tree's: {speed}")
