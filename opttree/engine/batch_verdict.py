"""What the batched throughput model (engine/batch_cost.py) says about where speculation pays, in one
sentence: torch-free, so the Serving tab's view (viz/serving.py) and `opttree serving`'s page
(bench/serving_report.py) say it from the same rule."""

from __future__ import annotations


def where_it_pays(best: dict[int, dict]) -> str:
    """One sentence from the model on the batch sizes where a tree pays (its best n > 0 and faster than AR),
    from `best_by_batch`: up to which B, or, where a tree pays again at a larger B (measured costs are noisy),
    both sides named."""
    rows = [best[b] for b in sorted(best)]
    paying = [r for r in rows if r["nodes"] > 0 and (r.get("speedup") or 0) > 1.0]
    if not paying:
        return "On this machine, by the model, no tree pays at any batch size measured."
    if len(paying) == len(rows):
        return (f"By the model, a tree pays at every batch size measured, but its best size shrinks from "
                f"n = {rows[0]['nodes']} to n = {rows[-1]['nodes']} as the batch grows.")
    if rows[:len(paying)] == paying:
        return (f"By the model, speculation pays up to B = {paying[-1]['batch']} and stops paying from "
                f"B = {rows[len(paying)]['batch']}: a batch fills the forward that a tree would have used.")

    def sizes(rs):
        return ", ".join(str(r["batch"]) for r in rs)
    return (f"By the model, a tree pays at B = {sizes(paying)} and not at B = "
            f"{sizes([r for r in rows if r not in paying])}; gains near 1× are within the measurement's noise.")
