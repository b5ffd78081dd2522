"""What the batched throughput model (engine/batch_cost.py) says about where speculation pays, in one
sentence: torch-free, so the Serving tab's view (viz/serving.py) and `opttree serving`'s page
(bench/serving_report.py) say it from the same rule."""

from __future__ import annotations

# A modelled gain no larger than this is called even, not paying: the model's time per step rests on measured
# costs, and its checks against real runs find it optimistic by more than that (docs/serving.md).
NEAR_EVEN = 1.05


def where_it_pays(best: dict[int, dict]) -> str:
    """One sentence from the model on the batch sizes where a tree pays (its best n > 0 and more than NEAR_EVEN
    times AR), from `best_by_batch`: up to which B, or, where a tree pays again at a larger B (measured costs
    are noisy), both sides named; then the batch sizes whose best tree gains too little to count."""
    rows = [best[b] for b in sorted(best)]
    paying = [r for r in rows if r["nodes"] > 0 and (r.get("speedup") or 0) > NEAR_EVEN]
    even = [r for r in rows if r["nodes"] > 0 and 1.0 < (r.get("speedup") or 0) <= NEAR_EVEN]
    said = _paying(rows, paying)
    if even:
        gains = ", ".join(f"×{r['speedup']:.2f} at B = {r['batch']} (n = {r['nodes']})" for r in even)
        said += (f" The best tree models {gains}: within {round(100 * (NEAR_EVEN - 1))} % of AR, inside the "
                 "model's error, so even.")
    return said


def _paying(rows: list[dict], paying: list[dict]) -> str:
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
