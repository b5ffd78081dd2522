"""What a prompt's prefill costs with the LM head over every prompt token and over the last one only:
`python -m opttree.bench.prefill_cost`.

The engine's prefill keeps only the last position's logits unless the drafter reads the prompt's rows
(Token Recycling; `models.loading.last_logits_only`). This times both forms side by side, interleaved,
after one warm-up each, for a few prompt lengths (random token ids: a forward's cost does not depend on
them), and prints a markdown table; `--out` writes the numbers and the machine as JSON.

    python -m opttree.bench.prefill_cost [--lengths 64,256,1024] [--reps 5] [--threads 2] [--out F.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

from opttree.bench.env import machine_info, note_load
from opttree.config import BUNDLED_ID
from opttree.decoding.kv_cache import new_cache
from opttree.engine.cost import sync
from opttree.errors import guarded
from opttree.models.loading import last_logits_only, load_target

FORMS = ("every row", "last row")


@torch.inference_mode()
def prefill_ms(target, lengths, reps: int, device) -> dict:
    """{length: {form: [ms, ...]}}: each repetition times both forms back to back, in turn first."""
    keep = {"every row": {}, "last row": last_logits_only(target)}
    g = torch.Generator().manual_seed(0)
    out = {}
    for n in lengths:
        ids = torch.randint(0, target.config.vocab_size, (1, n), generator=g).to(device)
        times = {form: [] for form in FORMS}
        for rep in range(reps + 1):                      # repetition 0 warms up and is dropped
            for form in (FORMS if rep % 2 else FORMS[::-1]):
                t0 = time.perf_counter()
                target(input_ids=ids, past_key_values=new_cache(target), use_cache=True, **keep[form])
                sync(device)
                if rep:
                    times[form].append((time.perf_counter() - t0) * 1e3)
        out[n] = times
    return out


def table(times: dict) -> str:
    rows = ["| prompt tokens | every row (ms) | last row (ms) | saved |", "|---|---|---|---|"]
    for n, t in times.items():
        every, last = (statistics.median(t[f]) for f in FORMS)
        rows.append(f"| {n} | {every:.1f} | {last:.1f} | {100 * (1 - last / every):.1f} % |")
    return "\n".join(rows)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(prog="python -m opttree.bench.prefill_cost", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--target", default=BUNDLED_ID)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--lengths", default="64,256,1024", help="prompt lengths in tokens, comma-separated")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default=None, help="write the timings and the machine here (JSON)")
    args = ap.parse_args(argv)
    try:
        lengths = [int(x) for x in args.lengths.split(",") if x.strip()]
    except ValueError:
        ap.error(f"--lengths takes whole numbers separated by commas, not {args.lengths!r}")
    if not lengths or min(lengths) < 1 or args.reps < 1:
        ap.error("--lengths needs positive token counts and --reps at least 1")
    torch.set_num_threads(args.threads)
    target = load_target(args.target, args.device, "fp32").target     # bad input: errors.guarded's one line
    info = machine_info(target.device)
    times = prefill_ms(target, lengths, args.reps, target.device)
    print(table(times))
    result = {"machine": note_load(info), "target": args.target, "reps": args.reps,
              "median_ms": {n: {f: round(statistics.median(t[f]), 2) for f in FORMS} for n, t in times.items()},
              "ms": times}
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1)
    return result


if __name__ == "__main__":
    raise SystemExit(guarded(main))
