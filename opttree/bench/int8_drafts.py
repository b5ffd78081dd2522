"""Which parts of a draft can run on int8 weights: τ and drafting time for each choice, side by side.

On CPU a draft may run on int8 weights (OPTTREE_DRAFT_INT8, `opttree/nets/few_row_linear.py`). This
loads a bundled draft once (the feature head unless --drafter says otherwise) and decodes the same
eval prompts at a fixed budget once per choice of the parts that keep fp32, the choices interleaved
prompt by prompt so that the machine's drift hits them alike. It prints τ (greedy decoding commits
the target's tokens whatever the draft proposes, so τ moves only with the draft's guesses) and the
drafting ms of a step, and pairs each choice with the first.

A choice is a comma-separated list of the draft's submodules that keep fp32 (for a head: `fc` the input
projection, `fuse` a fused head's, `decoder` the layer, `lm_head` the LM-head rows; for the classic
draft its own dotted names, e.g. `lm_head`, `model.layers.0`); an empty choice puts all of it on int8; `fp32`
keeps everything fp32. What loading does is the draft's `int8_skip` (nothing for the classic draft).

    python -m opttree.bench.int8_drafts --prompts 16 --nodes 10 --variants "fp32;fc,fuse;;fc,fuse,lm_head"
    python -m opttree.bench.int8_drafts --drafter early-exit --variants "fp32;"
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from dataclasses import replace

import torch

from opttree import paths
from opttree.bench.prompts import read_prompts, spread
from opttree.bench.verdict import mean_se
from opttree.config import BUNDLED_ID, DecodeConfig
from opttree.drafters.registry import load_pair
from opttree.engine.speculative import run
from opttree.errors import guarded
from opttree.nets import few_row_linear as FR
from opttree.nets.feature_head import LM_ROWS, FeatureHead

FP32 = "fp32"


def parts(head, choice: str) -> tuple[str, ...]:
    """The choice's names, each checked: a name the draft does not have would silently keep nothing."""
    names = tuple(p.strip() for p in choice.split(",") if p.strip())
    for name in names:
        if name == LM_ROWS and isinstance(head, FeatureHead):   # the rows it reads from the target's LM head
            continue
        try:
            head.get_submodule(name)
        except AttributeError:
            raise SystemExit(f"the draft has no part {name!r} (its modules: "
                             f"{', '.join(n for n, _ in head.named_children())})") from None
    return names


def apply(head, choice: str) -> None:
    """Put `head` on the choice's kernels: all fp32, or int8 but for the named submodules."""
    if choice == FP32:
        FR.use_few_row_linear(head)
        return
    head.int8_skip = parts(head, choice)
    FR.use_few_row_linear(head, draft=True)


def measure(pair, choices: list[str], prompts: int, nodes: int, depth: int, tokens: int, log=print) -> dict:
    """{choice: {"tau": [...], "draft_ms": [...]}} over the first `prompts` eval prompts (round-robin)."""
    os.environ["OPTTREE_DRAFT_INT8"] = "1"     # int8 on, so that `apply` can choose the parts
    os.environ["OPTTREE_DRAFT_ROWS"] = "fp32"  # the fp32 choices mean fp32, also on a CPU that would take bf16 rows
    if not FR._have_int8():
        raise SystemExit("this PyTorch build has no dynamic int8 linear (torch.ops.quantized.linear_dynamic).")
    cfg = DecodeConfig(method="opt-tree", nodes=nodes, threshold=0.0, max_depth=depth, max_new_tokens=tokens)
    warm = replace(cfg, max_new_tokens=2)
    for c in choices:   # each choice's packed weights are made here, outside the timed runs, and kept
        apply(pair.draft_model, c)
        run(pair, "Hello", warm)
    rows = {c: {"tau": [], "draft_ms": []} for c in choices}
    for i, p in enumerate(spread(read_prompts(paths.EVAL_PROMPTS), prompts)):
        for c in choices:
            apply(pair.draft_model, c)
            s = run(pair, p.prompt, cfg)["summary"]
            rows[c]["tau"].append(s["tau"])
            rows[c]["draft_ms"].append(s["mean_draft_ms"])
        log(f"prompt {i + 1}/{prompts} [{p.category}] " + "  ".join(
            f"{c or 'all int8'}: τ={rows[c]['tau'][-1]:.2f}" for c in choices))
    return rows


def table(rows: dict) -> str:
    first = next(iter(rows))
    out = ["| fp32 parts | τ | τ against the first (paired) | drafting ms a step |", "|---|---|---|---|"]
    for c, r in rows.items():
        d, se = mean_se([b - a for a, b in zip(rows[first]["tau"], r["tau"])])
        se = se or 0.0
        name = "all (no int8)" if c == FP32 else (c.replace(",", ", ") or "none (all int8)")
        out.append(f"| {name} | {statistics.fmean(r['tau']):.3f} | {d:+.3f} ± {se:.3f} | "
                   f"{statistics.fmean(r['draft_ms']):.1f} |")
    return "\n".join(out)


def main(argv=None) -> str:
    ap = argparse.ArgumentParser(prog="python -m opttree.bench.int8_drafts", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--variants", default="fp32;fc,fuse;;fc,fuse,lm_head",
                    help="';'-separated choices (see above); the first is the one the others pair with")
    ap.add_argument("--prompts", type=int, default=16, help="eval prompts (round-robin over categories)")
    ap.add_argument("--nodes", type=int, default=10)
    ap.add_argument("--max-depth", type=int, default=5)
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--drafter", choices=["eagle", "early-exit", "classic"], default="eagle")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    choices = list(dict.fromkeys(v.strip() for v in args.variants.split(";")))
    start = time.time()
    pair = load_pair(BUNDLED_ID, args.drafter, device="cpu")
    rows = measure(pair, choices, args.prompts, args.nodes, args.max_depth, args.tokens)
    text = (f"{args.drafter} draft, {args.prompts} eval prompts, OPT-Tree n = {args.nodes}, δ 0, "
            f"depth ≤ {args.max_depth}, {args.tokens} new tokens, T = 0, {args.threads} threads, "
            f"{time.time() - start:.0f} s:\n\n{table(rows)}")
    print(text)
    return text


if __name__ == "__main__":
    raise SystemExit(guarded(main))
