"""The draft-length predictor (after AdaEAGLE's Lightweight Draft Length Predictor), trained on this CPU.

A step's features are the target's last hidden state: the last token the target has read, the one
before the step's root (what the decoding loop holds when the step starts). The label is the
accepted length A of that step when the draft is allowed to go deep (OPT-Tree, a fixed budget, δ = 0,
the deepest trees the settings allow), i.e. how far this context lets the draft get.

Data comes from decoding prompts of the drafts' own training data (never the eval sets): the
training prompts, and the real users' turns recipe (b) answered (opttree/train/sharegpt_answers.py,
read back from its shards), the mix the shipped head learnt from. Each run's trace gives the steps'
A, and one forward of the target over prompt + output gives every position's hidden state (a causal
model's state at a position depends only on the tokens up to it, so these equal the states the loop
held). Held-out prompts of both sources (`train.jsonl`'s flag, each conversation's own) are the
validation set, reported per source and against the predictor the run replaces.

    python -m opttree.train --kind length-predictor [--prompts 96] [--sharegpt 96] [--tokens 64] [--threads 2]

Writes `opttree/assets/length/<name>.safetensors` (fp16, a few thousand parameters; the network is in
opttree/nets/length_predictor.py) and its JSON card (data, held-out error against a constant
predictor, date, command).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import sys
import time
from pathlib import Path

import torch
from safetensors.torch import save_file
from torch import nn

from opttree import paths
from opttree.config import BUNDLED_ID, DecodeConfig
from opttree.decoding.prompts import encode_prompt
from opttree.drafters.registry import load_pair
from opttree.engine.cost import draft_kernel
from opttree.engine.speculative import run
from opttree.errors import BadInput, guarded
from opttree.nets.length_predictor import DEFAULT_PREDICTOR, HIDDEN, LengthPredictor, load_length_predictor
from opttree.train.common import MEASURE_DEVICE, device_arg
from opttree.train.generate import load_shards, shard_paths
from opttree.train.prompts import FIT_PARTS, train_prompts


def fit(x: torch.Tensor, y: torch.Tensor, epochs: int = 400, lr: float = 1e-2, weight_decay: float = 1e-3,
        seed: int = 0, hidden: int = HIDDEN, validation: float = 0.0) -> LengthPredictor:
    """Full-batch AdamW on the squared error (a few thousand rows: seconds on a CPU).

    `validation` > 0 keeps the last part of the rows (rows come in prompt order, so those are the
    last prompts) out of training and returns the weights of the epoch where their error was lowest:
    a few hundred rows against hundreds of features overfit fast otherwise."""
    torch.manual_seed(seed)
    cut = len(y) - int(len(y) * validation)
    (tx, ty), (vx, vy) = (x[:cut], y[:cut].float()), (x[cut:], y[cut:].float())
    model = LengthPredictor(x.shape[1], hidden)
    model.mean.copy_(tx.float().mean(0))
    model.std.copy_(tx.float().std(0).clamp_min(1e-4))
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    best, best_state = float("inf"), None
    for _ in range(epochs):
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(tx), ty)
        loss.backward()
        opt.step()
        if len(vy):
            with torch.no_grad():
                err = float(nn.functional.mse_loss(model(vx), vy))
            if err < best:
                best, best_state = err, {k: v.clone() for k, v in model.state_dict().items()}
    if best_state is not None:
        model.load_state_dict(best_state)
    return model.eval()


@torch.no_grad()
def evaluate(model: LengthPredictor, x: torch.Tensor, y: torch.Tensor, baseline: float) -> dict:
    """Mean absolute error against the constant `baseline` (the training mean), and how often the
    depth the controller would draft (round(Â) + 1) reaches the accepted length; None for each with no rows."""
    if not len(y):
        return {"rows": 0, **dict.fromkeys(("mae", "mae_constant", "depth_reaches_A", "mean_depth", "mean_A"))}
    pred = model(x)
    depth = pred.round() + 1
    return {"rows": int(len(y)), "mae": round(float((pred - y).abs().mean()), 4),
            "mae_constant": round(float((baseline - y).abs().mean()), 4),
            "depth_reaches_A": round(float((depth >= y).float().mean()), 4),
            "mean_depth": round(float(depth.mean()), 3), "mean_A": round(float(y.float().mean()), 3)}


@torch.no_grad()
def collect(pair, prompts: list, cfg, log=None) -> tuple[torch.Tensor, torch.Tensor]:
    """(features, A) for every drafted step of runs on `prompts` (texts, or token id lists used as
    they are; see the module docstring)."""
    xs, ys = [], []
    for i, prompt in enumerate(prompts):
        ids = list(prompt) if isinstance(prompt, list) else encode_prompt(pair.tokenizer, prompt)
        trace = run(pair, "", cfg, prompt_ids=ids, record_target=False)
        seq = ids + trace["output_ids"]
        out = pair.target(input_ids=torch.tensor([seq], device=pair.device), output_hidden_states=True)
        states = out.hidden_states[-1][0].float().cpu()
        root = len(ids) - 1                         # the first step's root: the prompt's last token
        for step in trace["steps"]:
            if step["tokens"] and root >= 1:
                xs.append(states[root - 1])
                ys.append(float(len(step["accepted"])))
            root += len(step["committed"])
        if log:
            log(f"prompt {i + 1}/{len(prompts)}: {len(trace['steps'])} steps, {len(xs)} rows so far")
    dim = pair.target.config.hidden_size
    return (torch.stack(xs) if xs else torch.zeros(0, dim)), torch.tensor(ys)


def sharegpt_prompts(data_dir, n: int, n_held: int, rng: random.Random) -> tuple[list, list]:
    """`n` training and `n_held` held-out prompts (token ids: earlier turns as context, the user's
    turn, the generation prompt) of the real users' turns stored in recipe (b)'s folder, drawn with
    `rng`; the split is each conversation's own `heldout` flag."""
    if not shard_paths(data_dir):
        raise SystemExit(f"no recipe (b) shards in {data_dir}: make them with `python -m opttree.train."
                         f"sharegpt_answers --out {data_dir} --tokens N`, or pass --sharegpt 0 --sharegpt-heldout 0.")
    seen, pools = set(), ([], [])
    for s in load_shards(data_dir, layer_feats=False):
        ids = tuple(int(t) for t in s["ids"][: int(s["plen"])])
        if ids not in seen:
            seen.add(ids)
            pools[bool(s["heldout"])].append(list(ids))
    for pool, want, name in ((pools[0], n, "training"), (pools[1], n_held, "held-out")):
        if want > len(pool):
            raise SystemExit(f"{data_dir} holds {len(pool)} {name} prompts; {want} were asked for.")
    return rng.sample(pools[0], n), rng.sample(pools[1], n_held)


def previous_predictor(path, dim: int) -> LengthPredictor | None:
    """The predictor a run replaces (at its --out path), to score on the same held-out rows."""
    try:
        return load_length_predictor(str(path), dim) if Path(path).is_file() else None
    except BadInput:
        return None


def save(model: LengthPredictor, out: Path, card: dict) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    save_file({k: v.detach().to(torch.float16).contiguous() for k, v in model.state_dict().items()}, str(out))
    out.with_suffix(".json").write_text(json.dumps(card, indent=1), encoding="utf-8")


def parse(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m opttree.train --kind length-predictor", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--prompts", type=int, default=96, help="training prompts decoded (held-out ones on top)")
    ap.add_argument("--heldout", type=int, default=24, help="held-out training prompts for validation")
    ap.add_argument("--sharegpt", type=int, default=96, help="real users' turns decoded, from recipe (b)'s shards")
    ap.add_argument("--sharegpt-heldout", type=int, default=24, help="held-out real users' turns for validation")
    ap.add_argument("--sharegpt-data", default=str(paths.data_dir() / "sharegpt-answers"),
                    help="recipe (b)'s folder (opttree/train/sharegpt_answers.py)")
    ap.add_argument("--tokens", type=int, default=64, help="new tokens per prompt")
    ap.add_argument("--nodes", type=int, default=25, help="the fixed budget of the labelling runs")
    ap.add_argument("--threads", type=int, default=2)
    device_arg(ap, default=MEASURE_DEVICE)
    ap.add_argument("--out", default=str(DEFAULT_PREDICTOR))
    ap.add_argument("--seed", type=int, default=0)
    # Chosen on the training prompts alone (their last 15 % as validation, never the held-out ones):
    # hidden 2/4/8 × weight decay 0.01/0.1/1 × learning rate 3e-3/1e-2.
    ap.add_argument("--hidden", type=int, default=HIDDEN)
    ap.add_argument("--weight-decay", type=float, default=1.0)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--epochs", type=int, default=300)
    ap.add_argument("--validation", type=float, default=0.15,
                    help="the last share of the training rows kept out to pick the epoch")
    args = ap.parse_args(argv)
    counts = ("prompts", "heldout", "sharegpt", "sharegpt_heldout")
    if any(getattr(args, name) < 0 for name in counts) or args.prompts + args.sharegpt < 1:
        ap.error("--prompts, --heldout, --sharegpt and --sharegpt-heldout count prompts (0 or more), and "
                 "--prompts + --sharegpt must be at least 1: a fit needs training rows.")
    return args


def draw_prompts(args) -> tuple[list, list, list]:
    """The prompts a run decodes, drawn with its seed: training prompts (the training file's and real
    users' turns, shuffled together so the fit's validation rows mix both sources), the training
    file's held-out prompts, and real users' held-out turns."""
    rng = random.Random(args.seed)
    every = [p for p in train_prompts() if p.part in FIT_PARTS]
    train = rng.sample([p.text for p in every if not p.heldout], args.prompts)
    held = rng.sample([p.text for p in every if p.heldout], args.heldout)
    users, users_held = (sharegpt_prompts(args.sharegpt_data, args.sharegpt, args.sharegpt_heldout, rng)
                         if args.sharegpt or args.sharegpt_heldout else ([], []))
    train = train + users
    rng.shuffle(train)
    return train, held, users_held


def rows_cache(args, draft_name, kernel: str = "default", rows: str | None = None) -> Path:
    """Where a run's decoded rows are kept: they depend on the prompts drawn (counts, seed), the decoding
    and the draft that decoded them (its file's size and time, so a retrained draft decodes afresh, and
    the kernel it ran on: int8 weights or bf16 LM-head rows guess differently, so they accept differently)."""
    draft = Path(str(draft_name))
    key = (f"{args.prompts}-{args.heldout}-{args.sharegpt}-{args.sharegpt_heldout}-{args.tokens}-{args.nodes}"
           f"-s{args.seed}-{draft.stem}" + ("-int8" if kernel == "int8" else "")
           + ("-bf16rows" if rows == "bf16" else ""))
    if draft.is_file():
        key += f"-{draft.stat().st_size}-{int(draft.stat().st_mtime)}"
    return paths.data_dir() / "length" / f"rows-{key}.pt"


def main(argv=None) -> dict:
    args = parse(argv)
    torch.set_num_threads(args.threads)
    pair = load_pair(drafter="eagle", device=args.device)
    cfg = DecodeConfig(method="opt-tree", nodes=args.nodes, threshold=0.0, max_depth=10,
                       max_new_tokens=args.tokens, temperature=0.0)
    t0 = time.time()

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    kernel = draft_kernel(pair.draft_model)
    cache = rows_cache(args, pair.draft_name, kernel["draft_kernel"], kernel["draft_rows"])
    cached = cache.exists()
    if cached:                         # the decoding is the slow part: refits reuse its rows (no prompt is read)
        x, y, hx, hy, ux, uy = torch.load(cache).values()
    else:
        train, held, users_held = draw_prompts(args)
        x, y = collect(pair, train, cfg, log)
        hx, hy = collect(pair, held, cfg, log)
        ux, uy = collect(pair, users_held, cfg, log)
        cache.parent.mkdir(parents=True, exist_ok=True)
        torch.save({"x": x, "y": y, "hx": hx, "hy": hy, "ux": ux, "uy": uy}, cache)
    previous = previous_predictor(args.out, x.shape[1])
    model = fit(x, y, epochs=args.epochs, lr=args.lr, weight_decay=args.weight_decay, seed=args.seed,
                hidden=args.hidden, validation=args.validation)
    baseline = float(y.mean())
    card = {"name": Path(args.out).stem, "kind": "length-predictor", "target": BUNDLED_ID,
            "drafter": pair.draft_name and Path(str(pair.draft_name)).name,
            "command": "python -m opttree.train --kind length-predictor " + " ".join(argv or sys.argv[1:]),
            "date": dt.date.today().isoformat(), "wall_s": round(time.time() - t0, 1),
            "rows_from_cache": cached,         # wall_s then covers the fit only (decoding ~10 min on 1 thread)
            "features": "the target's last hidden state (the token before the step's root)",
            "label": "accepted length A with OPT-Tree at a fixed budget, δ = 0, max depth 10",
            "decode": cfg.to_dict(), "parameters": sum(p.numel() for p in model.parameters()),
            "hparams": {k: getattr(args, k) for k in ("hidden", "weight_decay", "lr", "epochs", "validation")},
            "baseline": "a constant predictor at the training rows' mean A (mae_constant)",
            "data": {"train_prompts": args.prompts + args.sharegpt, "of_them_sharegpt": args.sharegpt,
                     "train_rows": len(y), "heldout_prompts": args.heldout, "heldout_rows": len(hy),
                     "heldout_sharegpt_prompts": args.sharegpt_heldout, "heldout_sharegpt_rows": len(uy)},
            "train": evaluate(model, x, y, baseline)}
    held_sets = {"heldout": (hx, hy), **({"heldout_sharegpt": (ux, uy)} if len(uy) else {})}
    card.update({name: evaluate(model, *rows, baseline) for name, rows in held_sets.items()})
    if previous is not None:           # the predictor this run replaces, on the same held-out rows
        card["previous"] = {name: evaluate(previous, *rows, baseline) for name, rows in held_sets.items()}
    save(model, Path(args.out), card)
    print(json.dumps({k: card[k] for k in ("train", "heldout", "heldout_sharegpt", "previous", "parameters")
                      if k in card}), flush=True)
    return card


if __name__ == "__main__":
    raise SystemExit(guarded(main))
