"""python -m opttree.train --kind head|classic|early-exit: prompts -> generated data -> training -> assets.

`--kind length-predictor` trains the draft-length predictor instead (opttree/train/length_predictor.py,
its own options).

Examples (a bundled draft's exact commands are in its card: `command` and `lineage`; docs/drafts.md):
  python -m opttree.train --kind head --tokens 400000
  python -m opttree.train --kind classic --tokens 400000 --no-generate
  python -m opttree.train --kind early-exit --exit-layer 1 --no-generate
All kinds share the generated data (data/gen). Every phase resumes (--resume for training).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

from opttree.config import BUNDLED_ID
from opttree.drafters.registry import load_pair
from opttree.errors import guarded
from opttree.train import card as C
from opttree.train import classic as CL
from opttree.train import data as D
from opttree.train import early_exit as EE
from opttree.train import head as H
from opttree.train.common import CKPT_DIR, MEASURE_DEVICE, device_arg, load_target
from opttree.train.generate import DEFAULT_DIR, gen_stats, run_generation


def parse(argv=None):
    ap = argparse.ArgumentParser(prog="python -m opttree.train", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kind", choices=list(C.KINDS), required=True)
    ap.add_argument("--target", default=BUNDLED_ID)
    ap.add_argument("--data", nargs="+", default=[str(DEFAULT_DIR)],
                    help="generated shards (shared by all kinds); several folders train together, e.g. "
                         "data/gen data/sharegpt-answers (generation writes to the first)")
    ap.add_argument("--tokens", type=int, default=400_000, help="response tokens to generate / train on")
    ap.add_argument("--no-generate", dest="generate", action="store_false",
                    help="train on whatever data exists")
    ap.add_argument("--prompts", default=None, help="jsonl prompt file (default: built-in set)")
    ap.add_argument("--max-prompts", type=int, default=0)
    ap.add_argument("--first-prompt", type=int, default=0, help="generate from this prompt on")
    ap.add_argument("--gen-batch", type=int, default=64)
    ap.add_argument("--max-new", type=int, default=256)
    ap.add_argument("--topk", type=int, default=20)
    ap.add_argument("--steps", type=int, default=0, help="training steps (0: use --epochs)")
    ap.add_argument("--epochs", type=float, default=2.0,
                    help="passes over the training data (0, without --steps: no training: evaluate and export "
                         "the --init-from draft as it is, e.g. over a wider --draft-vocab)")
    ap.add_argument("--minutes", type=float, default=0, help="wall-clock budget for training (0: none)")
    ap.add_argument("--lr", type=float, default=None)
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--batch-tokens", type=int, default=4096)
    ap.add_argument("--max-len", type=int, default=0, help="truncate sequences (0: no)")
    ap.add_argument("--layers", type=int, default=None, help="decoder layers: head and early-exit 1; classic 3")
    ap.add_argument("--eval-every", type=int, default=100)
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--extend", action="store_true", help="with --resume: train further with a new schedule")
    ap.add_argument("--out", default=None, help="weights file (default: the bundled asset path)")
    ap.add_argument("--ckpt-dir", default=str(CKPT_DIR))
    ap.add_argument("--tau-prompts", type=int, default=10,
                    help="eval prompts for τ after training (0: skip); measured on the CPU whatever --device "
                         "says, as the card command measures")
    C.fit_args(ap, default=12)
    ap.add_argument("--export-every-eval", action="store_true")
    ap.add_argument("--threads", type=int, default=2)
    device_arg(ap)
    ap.add_argument("--bf16", action="store_true", help="bf16 autocast for the training forward")
    ap.add_argument("--init-from", default=None,
                    help="warm start from an exported draft (.safetensors), e.g. the shipped one")
    ap.add_argument("--seed", type=int, default=0)
    H.add_args(ap)
    CL.add_args(ap)
    EE.add_args(ap)
    args = ap.parse_args(argv)
    if args.fused and args.kind != "head":
        ap.error("--fused trains a fused feature head: use it with --kind head.")
    if args.layers is None:
        args.layers = 3 if args.kind == "classic" else 1
    if args.lr is None:
        args.lr = 3e-4 if args.kind == "classic" else 1e-3
    if args.out is None:
        args.out = str(C.KINDS[args.kind][1])
    return args


def main(argv=None) -> dict:
    argv = sys.argv[1:] if argv is None else list(argv)
    if "length-predictor" in argv and argv[argv.index("length-predictor") - 1] == "--kind":
        from opttree.train import length_predictor  # its own options: loaded only for that kind

        i = argv.index("length-predictor")
        return length_predictor.main(argv[:i - 1] + argv[i + 1:])
    args = parse(argv)
    torch.set_num_threads(args.threads)
    if args.generate:
        run_generation(argparse.Namespace(
            target=args.target, out=args.data[0], prompts=args.prompts, tokens=args.tokens,
            max_prompts=args.max_prompts, first_prompt=args.first_prompt, batch=args.gen_batch,
            max_new=args.max_new, topk=args.topk, layer_feats=args.fused,
            threads=args.threads, device=args.device))
    train, test = D.load_split(args.data, args.tokens, layer_feats=args.fused)
    if not train:
        raise SystemExit(f"no generated data in {' '.join(args.data)}: run without --no-generate.")
    print(f"data: {D.response_tokens(train)} train / {D.response_tokens(test)} held-out response tokens "
          f"({len(train)} / {len(test)} sequences)", flush=True)
    target = load_target(args.target, args.device)
    result = TRAINERS[args.kind](args, target, train, test)
    card = {"name": Path(args.out).stem, "target": args.target,
            "command": "python -m opttree.train " + " ".join(argv),
            "data": {"train_response_tokens": D.response_tokens(train),
                     "heldout_response_tokens": D.response_tokens(test),
                     "train_sequences": len(train), "heldout_sequences": len(test),
                     "generation": {d: gen_stats(d) for d in args.data} if len(args.data) > 1
                     else gen_stats(args.data[0])},
            **result}
    card_path = Path(args.out).with_suffix(".json")
    C.write_card(card_path, card)
    if args.fit_temperature or args.tau_prompts:   # measured where the card command measures (MEASURE_DEVICE)
        pair = load_pair(args.target, drafter=C.KINDS[args.kind][0], draft=args.out, device=MEASURE_DEVICE)
        if args.fit_temperature:
            fit = C.record_fit(pair, card, args.fit_temperature, args.fit_sharegpt)
            print(f"tree temperature {fit['tree_temperature']} (τ by temperature on held-out prompts: "
                  f"{fit['tau_by_temperature']})", flush=True)
            C.write_card(card_path, card)
        if args.tau_prompts:
            C.record_tau(pair, card, n=args.tau_prompts)
            print(f"τ on {card['tau_eval']['n_prompts']} eval prompts: {card['tau_eval']['tau']}", flush=True)
            C.write_card(card_path, card)
    print(json.dumps({k: card[k] for k in ("heldout_top1_by_depth", "steps", "train_wall_s")}), flush=True)
    return card


TRAINERS = {"head": H.train_head, "classic": CL.train_classic, "early-exit": EE.train_exit_head}


if __name__ == "__main__":
    raise SystemExit(guarded(main))
