"""A draft's positional acceptance vector, measured with the real decoding loop on held-out training
prompts (never the eval or final sets); Sequoia's tree (trees/sequoia.py) is optimal for it.

Definition. For rank r, a[r] = P(the rank-r child of a node is accepted | the node was accepted).
It is read from real OPT-Tree runs at T = 0 (the card's decode settings) through the trace's
`topk_rows`: every recorded row of an accepted node (the root always is) holds the target's and the
draft's top 8 at that row, so the target's own token there (its argmax: the token the verifier
accepts at T = 0) has a draft rank r, and a child of rank r at that node is accepted exactly when
the target's token is the draft's rank-r candidate, whether or not this run's tree held that
child. a[r] is the share of those rows where the target's token has draft rank r; a token outside
the draft's top 8 counts as a miss of every rank, so ranks ≥ 8 count 0.

At T = 0 a node accepts at most one child, so a rank-r child is accepted only when its elder
siblings (always in a Sequoia tree beside it) were rejected: a[r] is already the joint rate "rank r
accepted and ranks 0..r-1 rejected" given the parent, the factor the DP multiplies along a path
(Σ_r a[r] ≤ 1). The conditional c[r] = a[r] / (1 - a[0] - … - a[r-1]), the rate given that the
elder siblings were rejected, is stored beside it as `conditional` (it is not a factor of the
product: c[0] = a[0] and c[r] ≥ a[r]).

Only rows the run recorded count: the root and the accepted nodes the draft expanded (a leaf of the
tree has no row), so the vector describes the nodes OPT-Tree grows children under; `by_depth` gives
a per depth to show how well one vector for all depths (Sequoia's positional assumption) fits.

    python -m opttree.train.card --kind head --acceptance 16   # measure and store in the card
"""

from __future__ import annotations

import time

from tqdm import tqdm

from opttree.config import DecodeConfig
from opttree.engine.speculative import run
from opttree.trace import TOPK

# The card's decode settings (train/card.py measure_tau): OPT-Tree at n = 60, δ = 0.5, T = 0.
MEASURE_CONFIG = DecodeConfig(method="opt-tree", nodes=60, threshold=0.5, max_depth=10, max_new_tokens=128,
                              temperature=0.0)
DEPTHS_SHOWN = 4   # by_depth lists the rows of the first few depths (deeper ones are few)


def target_rank(row: dict) -> int:
    """The draft rank of the target's token at a recorded row (TOPK when outside the draft's top TOPK).

    A row lists the union of both top-TOPK sets ordered by the target's p, so its first id is the
    target's argmax, and every token the draft ranks above it is in the row."""
    q = row["q"][0]
    higher = sum(1 for x in row["q"] if x > q)
    return min(higher, TOPK)


def tally(trace: dict, counts: dict) -> None:
    """Add one trace's accepted rows to `counts` ({"rows", "hits": per rank, "by_depth": {depth: ...}})."""
    for step in trace["steps"]:
        accepted = set(step["accepted"])
        for row in step.get("topk_rows", []):
            node = row["node"]
            if node != -1 and node not in accepted:
                continue
            depth = 1 if node == -1 else step["depth"][node] + 1     # the depth of the children judged
            rank = target_rank(row)
            for where in (counts, counts["by_depth"].setdefault(depth, new_counts(by_depth=False))):
                where["rows"] += 1
                if rank < TOPK:
                    where["hits"][rank] += 1


def new_counts(by_depth: bool = True) -> dict:
    out = {"rows": 0, "hits": [0] * TOPK}
    if by_depth:
        out["by_depth"] = {}
    return out


def rates(counts: dict) -> list[float]:
    """a[r] = hits of rank r / rows (4 decimals)."""
    return [round(h / counts["rows"], 4) if counts["rows"] else 0.0 for h in counts["hits"]]


def conditional(a: list[float]) -> list[float]:
    """c[r] = a[r] / (1 - Σ_{j<r} a[j]): the rate given that ranks 0..r-1 were rejected."""
    out, left = [], 1.0
    for x in a:
        out.append(round(x / left, 4) if left > 1e-12 else 0.0)
        left -= x
    return out


def measure_acceptance(pair, questions: list[dict], cfg: DecodeConfig = MEASURE_CONFIG, log=None) -> dict:
    """The vector over OPT-Tree runs on `questions` (eval-style dicts: their first turn), with its
    counts, the conditional form, the per-depth rates and what was run."""
    counts = new_counts()
    t0 = time.time()
    for q in tqdm(questions, desc=f"acceptance {pair.drafter_kind}", unit="prompt", disable=log is None):
        tally(run(pair, q["turns"][0], cfg, record_target=True), counts)
    a = rates(counts)
    return {"acceptance_by_rank": a, "conditional": conditional(a), "rows": counts["rows"],
            "hits_by_rank": counts["hits"],
            "by_depth": {str(d): {"rows": c["rows"], "acceptance_by_rank": rates(c)}
                         for d, c in sorted(counts["by_depth"].items()) if d <= DEPTHS_SHOWN},
            "heldout_prompts": [q["question_id"] for q in questions], "decode": cfg.to_dict(),
            "definition": "a[r] = P(rank-r child accepted | parent accepted) at T = 0, from the rows of "
                          "accepted nodes in OPT-Tree runs (opttree/train/acceptance.py)",
            "date": time.strftime("%Y-%m-%d"), "wall_s": round(time.time() - t0, 1)}
