"""Pool per-step (E(A), A) pairs from bench results into a sweep result (and redraw its scatter).

`python -m opttree.bench.pool SWEEP.json BENCH.json [...] [--plot-dir DIR]` — used when bench and
sweep ran side by side, so the sweep could not read the bench's steps while it ran.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from opttree.bench.plots import plot_ea_vs_a
from opttree.bench.sweep import ea_a_stats
from opttree.errors import BadInput, guarded


def pool_ea_a(result: dict, paths) -> dict:
    """Set result["ea_a_pooled"] from the sweep's own steps plus those in the bench JSONs at `paths`."""

    pooled = {m: list(v) for m, v in result["ea_a"].items()}
    for path in paths:
        try:
            extra = json.loads(Path(path).read_text(encoding="utf-8")).get("ea_a", {})
        except (OSError, json.JSONDecodeError) as exc:
            raise BadInput(f"{path}: cannot read a bench result ({exc}).") from None
        for m, pts in extra.items():
            # A result written before its steps without a tree were left out holds them as (0, 0): every node's
            # p̂ is positive, so E(A) = 0 is such a step, no calibration point (calibration.ea_a_pairs).
            pooled.setdefault(m, []).extend(pt for pt in pts if pt[0] > 0)
    result["ea_a_pooled"] = {**ea_a_stats(pooled), "sources": ["sweep", *(Path(p).name for p in paths)]}
    return pooled


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m opttree.bench.pool")
    p.add_argument("sweep")
    p.add_argument("bench", nargs="+")
    p.add_argument("--plot-dir", default=None)
    args = p.parse_args(argv)
    result = json.loads(Path(args.sweep).read_text(encoding="utf-8"))
    pooled = pool_ea_a(result, args.bench)
    Path(args.sweep).write_text(json.dumps(result, ensure_ascii=False, indent=1), encoding="utf-8")
    stats = result["ea_a_pooled"]
    if args.plot_dir:
        plot_ea_vs_a(pooled, Path(args.plot_dir) / "ea_vs_a.png", result["meta"])
    print(f"E(A) vs A over {stats['steps']} steps: binned r={stats['binned_r']}, slope={stats['slope']}, "
          f"per-step r={stats['pearson_r']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(guarded(main))
