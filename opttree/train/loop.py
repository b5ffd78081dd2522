"""The one training loop both drafts share: schedule, resume / extend, wall-clock budget, thread
tuning, bf16 autocast, periodic held-out evaluation with checkpoint and export.

A draft kind supplies only what differs: `forward(batch) -> (loss, top1)` on one collated batch,
`evaluate() -> (history fields, text)` on the held-out set, and `export() -> file bytes`.
"""

from __future__ import annotations

import contextlib
import random
import re
import time
from pathlib import Path

import torch
from tqdm import tqdm

from opttree.train import data as D
from opttree.train.common import ThreadTuner, Timer, budget_total, load_checkpoint, lr_at, save_checkpoint


def autocast(args, device: torch.device):
    """bf16 autocast for the training forward (about 1.2-2x faster on CPUs with AVX512-BF16 or on
    GPUs); evaluation always runs in fp32, the dtype the drafts decode in on CPU."""
    if not getattr(args, "bf16", False):
        return contextlib.nullcontext()
    return torch.autocast(device.type, dtype=torch.bfloat16)


def device_of(module) -> torch.device:
    """Where a draft trains: the device its parameters are on (its target's, `--device`)."""
    return next(module.parameters()).device


def train_loop(args, name: str, module, config: dict, train: list[dict], forward, evaluate, export) -> dict:
    device = device_of(module)
    params = [p for p in module.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=args.lr, weight_decay=0.0, betas=(0.9, 0.95))
    ckpt_path = Path(args.ckpt_dir) / f"{name}.pt"
    epoch_batches = len(D.batches(train, args.batch_tokens, max_len=args.max_len))
    # --epochs 0 (and no --steps): no training step; the draft (e.g. an --init-from one over another
    # --draft-vocab) is evaluated and exported as it is.
    planned = args.steps or (max(1, int(args.epochs * epoch_batches)) if args.epochs > 0 else 0)
    step, epoch, history, in_epoch, sched0, total, timer = 0, 0, [], 0, 0, planned, Timer()
    resumed = False
    if args.resume and (ck := load_checkpoint(ckpt_path)) is not None and ck["config"] == config:
        module.load_state_dict(ck.get("model", ck.get("head")))
        opt.load_state_dict(ck["opt"])
        step, epoch, history, in_epoch = ck["step"], ck["epoch"], ck["history"], ck.get("in_epoch", 0)
        sched0, total, timer, resumed = ck.get("sched0", 0), ck.get("total", planned), Timer(ck["elapsed"]), True
        print(f"resumed {name} training at step {step}/{total}", flush=True)
        if args.extend:  # a fresh schedule (warmup + cosine) on top of the finished run
            sched0, total = step, step + planned

    def checkpoint(bi: int) -> None:
        fields, text = evaluate()
        history.append({"step": step, **fields, "elapsed_s": round(timer.elapsed, 1)})
        tqdm.write(f"{name} step {step}: {text}")
        save_checkpoint(ckpt_path, model=module.state_dict(), opt=opt.state_dict(), step=step, epoch=epoch,
                        history=history, elapsed=timer.elapsed, config=config, total=total,
                        in_epoch=bi, sched0=sched0)
        if args.export_every_eval:
            export()

    if not history:
        checkpoint(0)
    tuner = ThreadTuner(args.threads, period=50, probe=1)
    run_step, run_t0, cap_total = step, time.time(), total
    bar = tqdm(total=total, initial=step, desc=name, unit="step", mininterval=5)
    running = None
    module.train()
    while step < total:
        order = D.batches(train, args.batch_tokens, random.Random(args.seed * 1000 + epoch), args.max_len)
        start = in_epoch if resumed else 0
        for bi, group in enumerate(order[start:], start=start):
            if step >= total:
                break
            batch = D.collate(group, args.max_len, device)
            for g in opt.param_groups:
                g["lr"] = lr_at(step - sched0, total - sched0, args.lr, args.warmup)
            tuner.start()
            with autocast(args, device):
                loss, top1 = forward(batch)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            tuner.stop(batch["ids"].numel())
            step += 1
            if args.minutes and step % 10 == 0:
                # The budget counts this invocation only, so --resume --extend gets its own minutes.
                total = budget_total(step, cap_total, args.minutes, run_step, time.time() - run_t0)
                bar.total = total
            running = top1 if running is None else 0.98 * running + 0.02 * top1
            bar.update(1)
            bar.set_postfix(thr=tuner.current, loss=f"{float(loss.detach()):.3f}", top1=f"{running:.3f}")
            if step % args.eval_every == 0 or step == total:
                checkpoint(bi + 1)
        epoch += 1
        resumed = False
    bar.close()
    return {"steps": step, "epochs": round(step / max(1, epoch_batches), 2),
            "train_wall_s": round(timer.elapsed, 1), "history": history, "file_bytes": export()}


LAYER_KEY = re.compile(r"^(.*\blayers\.)(\d+)\.")
RESIDUAL_OUTPUTS = ("self_attn.o_proj.weight", "mlp.down_proj.weight")


def layer_indices(keys) -> set[tuple[str, int]]:
    """The (key prefix, index) of every decoder layer named in a state dict's keys."""
    return {(m[1], int(m[2])) for m in map(LAYER_KEY.match, keys) if m}


def init_from(module, path: str | Path) -> int:
    """Warm start from an exported draft (e.g. the shipped asset): copies every tensor whose name and
    shape match, so a head retrained with another draft vocabulary keeps its learned layers.

    A draft with more decoder layers than the file grows from it: each layer past the file's last
    one (same key prefix, higher index) starts as the identity, whatever it was initialised to
    before. A Llama layer adds its attention and MLP outputs to the residual stream
    (h + o_proj(attn(norm h)), then + down_proj(mlp(norm h))); with both output projections zero it
    adds nothing, so at step 0 the deeper draft computes exactly what the file's draft computes (over
    the same draft vocabulary: `--init-vocab` for a head), and training moves the new layer from
    there (its output projections get gradients at once). A file whose layers carry another prefix
    grows nothing."""
    from safetensors.torch import load_file  # imported with the weights it reads or writes

    state = module.state_dict()
    file = load_file(str(path))
    loaded = 0
    with torch.no_grad():
        for k, v in file.items():
            if k in state and state[k].shape == v.shape and k != "vocab_ids":
                state[k].copy_(v.to(state[k].dtype))
                loaded += 1
        if not loaded:
            raise SystemExit(f"--init-from {path}: no tensor matches this draft's shapes.")
        last = {}   # the file's deepest layer index under each key prefix
        for prefix, i in layer_indices(file):
            last[prefix] = max(last.get(prefix, i), i)
        grown = sorted((prefix, i) for prefix, i in layer_indices(state) if i > last.get(prefix, float("inf")))
        for prefix, i in grown:
            for name in RESIDUAL_OUTPUTS:
                if (key := f"{prefix}{i}.{name}") in state:
                    state[key].zero_()
    print(f"initialised {loaded} tensors from {path}"
          + (f"; {len(grown)} new layer(s) start as the identity" if grown else ""), flush=True)
    return loaded
