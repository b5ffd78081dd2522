"""The early-exit sweep's table: for each exit layer N, what its head learned and what it bought.

Reads the folder `benchmarks/early_exit_sweep.sh` writes (per N: the head's card `card-N.json` and a
bench result `exit-N.json` with AR in the same run) and prints one markdown table. The cost of the
draft is read from the bench's own cost curve: one draft layer of w nodes runs the target's first N
layers, the exit layer and the LM head's draft-vocabulary rows; a verification runs all layers.

    python -m opttree.bench.exit_sweep benchmarks/early_exit --out benchmarks/early_exit/sweep.md
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from opttree.bench.report import fmt, pct
from opttree.errors import guarded

PRIMARY = "opt-tree@auto~thompson"   # EESD's controller on OPT-Tree's auto-sized trees


def load(folder: Path) -> list[dict]:
    """One row per N that has both a card and a bench result, by N."""
    rows = []
    for bench in folder.glob("exit-*.json"):
        n = int(re.fullmatch(r"exit-(\d+)\.json", bench.name).group(1))
        card = folder / f"card-{n}.json"
        if card.exists():
            rows.append({"n": n, "card": json.loads(card.read_text()), "bench": json.loads(bench.read_text())})
    return sorted(rows, key=lambda r: r["n"])


def best(rows: list[dict], method: str = PRIMARY) -> int | None:
    """The N whose `method` ran fastest relative to AR in its own run."""
    scored = [(r["bench"]["methods"][method]["speedup"], r["n"]) for r in rows if method in r["bench"]["methods"]]
    return max(scored)[1] if scored else None


def table(rows: list[dict]) -> str:
    methods = [m for m in rows[0]["bench"]["methods"] if m != "ar"] if rows else []
    head = ["N", "held-out top-1", "chain agreement d=1..3", "draft layer ms (1 / 4 nodes)", "verify ms (1 / 8 tokens)",
            "AR tok/s", *[f"{m}: τ / × AR" for m in methods]]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        card, bench = r["card"], r["bench"]
        cost = bench["meta"]["cost"]
        layer = dict(zip(cost["widths"], cost["layer_ms"]))
        verify = dict(zip(cost["tokens"], cost["verify_ms"]))
        ms = bench["methods"]
        cells = [str(r["n"]), pct(card["heldout_top1_by_depth"][0]),
                 " / ".join(pct(c) for c in card["heldout_chain_agreement_by_depth"][:3]),
                 f"{fmt(layer.get(1))} / {fmt(layer.get(4))}",
                 f"{fmt(verify.get(1), '.1f')} / {fmt(verify.get(8), '.1f')}",
                 fmt(ms["ar"]["tokens_per_s"]),
                 *[f"{fmt(ms[m]['tau'])} / {fmt(ms[m]['speedup'])}×" for m in methods]]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None) -> str:
    ap = argparse.ArgumentParser(prog="python -m opttree.bench.exit_sweep", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folder")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    rows = load(Path(args.folder))
    if not rows:
        raise SystemExit(f"no exit-N.json with its card-N.json in {args.folder}")
    meta = rows[0]["bench"]["meta"]
    n_best = best(rows)
    text = "\n".join([
        "# Early-exit sweep: which layer to exit after",
        "",
        f"Machine: {meta['machine'].get('cpu', '')}, {meta['cost']['threads']} thread(s), {meta['dtype']}; "
        f"{meta['prompts']} eval prompts, {meta['config']['max_new_tokens']} new tokens, T = 0; each N in its own "
        f"run with AR beside it (speedups are within a run). Command: `benchmarks/early_exit_sweep.sh`.",
        "",
        table(rows),
        "",
        f"Fastest with {PRIMARY}: N = {n_best}." if n_best is not None else "",
        "",
    ])
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    print(text)
    return text


if __name__ == "__main__":
    raise SystemExit(guarded(main))
