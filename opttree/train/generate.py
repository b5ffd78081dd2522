"""Self-distillation data: the target's own greedy responses, its last hidden states and top-k probs.

For each prompt (chat template applied, as at decode time) the target answers greedily with a KV
cache, in batches (left padding; finished rows are dropped from the batch as it goes). During the
same loop we keep, per sequence of L tokens:
  ids        (L,)      int32   prompt + response tokens
  feats      (L-1, h)  fp16    target last hidden state (post final norm) at positions 0..L-2
  layer_feats (L-1, m, h) fp16   with --layer-feats: the hidden states entering the target's layers
                                 `feat_layers` (the fused head's low and middle ones), same positions
  feat_layers (m,)      int32   those layer indices (transformers' hidden_states numbering)
  topk_ids   (R, k)    int32   target top-k tokens at positions P-1..L-2 (R = L-P response tokens)
  topk_p     (R, k)    fp16    their probabilities (softmax at T=1)
  plen       int               prompt length P
One shard per batch (data/gen/shard_00012.pt); existing shards are skipped, so a killed run resumes.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch
from tqdm import tqdm

from opttree import paths
from opttree.config import BUNDLED_ID
from opttree.decoding.prompts import encode_prompt
from opttree.errors import guarded
from opttree.models.loading import load_tokenizer
from opttree.nets.feature_head import fused_layers
from opttree.train.common import ThreadTuner, device_arg, load_target, save_atomic
from opttree.train.prompts import read_prompts, write_prompts

DEFAULT_DIR = paths.data_dir() / "gen"


def shard_paths(data_dir: str | Path) -> list[Path]:
    return sorted(Path(data_dir).glob("shard_*.pt"))


def iter_shards(data_dir: str | Path, layer_feats: bool = True):
    """Each stored shard in order, loaded one at a time; `layer_feats=False` drops the lower layers'
    states (only a fused head reads them, and they are two thirds of the data)."""
    for p in shard_paths(data_dir):
        shard = torch.load(p, weights_only=True)
        if not layer_feats:
            for s in shard:
                s.pop("layer_feats", None)
        yield shard


def load_shards(data_dir: str | Path, layer_feats: bool = True) -> list[dict]:
    """Every stored sequence (see `iter_shards`)."""
    return [s for shard in iter_shards(data_dir, layer_feats) for s in shard]


def count_tokens(data_dir: str | Path) -> int:
    """Response tokens (the ones with targets) stored so far."""
    total = 0
    for p in shard_paths(data_dir):
        total += sum(int(s["ids"].numel() - s["plen"]) for s in torch.load(p, weights_only=True))
    return total


def _keep_rows(cache, rows: torch.Tensor) -> None:
    for layer in cache.layers:
        if getattr(layer, "keys", None) is not None and layer.keys.numel():
            layer.keys = layer.keys.index_select(0, rows)
            layer.values = layer.values.index_select(0, rows)


def _by_sequence(records: list[tuple[list[int], list[bool], torch.Tensor]], n: int,
                 empty: torch.Tensor) -> list[torch.Tensor]:
    """Rows recorded a step at a time, (owners, kept, rows) per step, regrouped per sequence in step
    order on the CPU: one copy off the device for the whole batch, not one per row and step. `empty`:
    no rows, in the rows' dtype and trailing shape (what a sequence gets when no step recorded any)."""
    if not records:
        return [empty] * n
    owners = torch.tensor([o for rec in records for o in rec[0]], dtype=torch.long)
    kept = torch.tensor([k for rec in records for k in rec[1]], dtype=torch.bool)
    rows = torch.cat([rec[2] for rec in records]).cpu()[kept]
    owners = owners[kept]
    order = torch.sort(owners, stable=True).indices
    return list(torch.split(rows[order], torch.bincount(owners, minlength=n).tolist()))


@torch.inference_mode()
def generate_batch(model, prompts_ids: list[list[int]], max_new: int, topk: int, eos: set[int],
                   tuner=None, layers: tuple[int, ...] = ()) -> list[dict]:
    from transformers import DynamicCache  # transformers is heavy: imported when a model is built

    body, lm_head, device = model.model, model.lm_head, model.device
    B = len(prompts_ids)
    L = max(len(p) for p in prompts_ids)
    ids = torch.zeros(B, L, dtype=torch.long)
    mask = torch.zeros(B, L, dtype=torch.long)
    for i, p in enumerate(prompts_ids):
        ids[i, L - len(p):] = torch.tensor(p)
        mask[i, L - len(p):] = 1
    ids, mask = ids.to(device), mask.to(device)
    pos = (mask.cumsum(-1) - 1).clamp(min=0)
    cache = DynamicCache(config=model.config)

    def run(**kw):
        out = body(past_key_values=cache, use_cache=True, output_hidden_states=bool(layers), **kw)
        extra = torch.stack([out.hidden_states[i] for i in layers], 2) if layers else None
        return out.last_hidden_state, extra

    h, extra = run(input_ids=ids, attention_mask=mask, position_ids=pos)
    prompt_feats = [h[i, L - len(p):].to(torch.float16).cpu() for i, p in enumerate(prompts_ids)]
    prompt_lfeats = [extra[i, L - len(p):].to(torch.float16).cpu() for i, p in enumerate(prompts_ids)] if layers else []
    rows = list(range(B))  # original index of each live row
    toks = [list(p) for p in prompts_ids]
    # Per step, for the rows in the batch: (their sequences, whether each row's entry is kept, the rows).
    tops_ids, tops_p, feats, lfeats = [], [], [], []
    done = [False] * B
    last_h = h[:, -1]
    next_pos = pos[:, -1] + 1
    for step in range(max_new):
        if tuner is not None:
            tuner.start()
        probs = torch.softmax(lm_head(last_h).float(), -1)
        top = torch.topk(probs, topk, -1)
        nxt = top.indices[:, 0]
        picked = nxt.tolist()           # one copy off the device a step, not one a row
        grows = [not done[i] for i in rows]     # finished rows wait in the batch until enough are dropped
        for r, i in enumerate(rows):
            if grows[r]:
                toks[i].append(picked[r])
                done[i] = picked[r] in eos or step == max_new - 1
        tops_ids.append((rows, grows, top.indices.to(torch.int32)))
        tops_p.append((rows, grows, top.values.to(torch.float16)))
        finished = [r for r, i in enumerate(rows) if done[i]]
        if len(finished) == len(rows):
            break
        if finished and (len(finished) * 4 >= len(rows) or len(finished) >= 8):
            live = torch.tensor([r for r, i in enumerate(rows) if not done[i]], device=device)
            _keep_rows(cache, live)
            mask, nxt, next_pos = mask[live], nxt[live], next_pos[live]
            rows = [rows[r] for r in live.tolist()]
        mask = torch.cat([mask, torch.ones(len(rows), 1, dtype=torch.long, device=device)], 1)
        h, extra = run(input_ids=nxt[:, None], attention_mask=mask, position_ids=next_pos[:, None])
        fed = [not done[i] for i in rows]       # the feature of each token just fed, for rows still growing
        feats.append((rows, fed, h[:, -1].to(torch.float16)))
        if layers:
            lfeats.append((rows, fed, extra[:, -1].to(torch.float16)))
        last_h = h[:, -1]
        next_pos = next_pos + 1
        if tuner is not None:
            tuner.stop(len(rows))
    out = []                            # stored on CPU, whatever device generated them
    hid, f16 = h.shape[-1], torch.float16
    grown_ids = _by_sequence(tops_ids, B, torch.zeros(0, topk, dtype=torch.int32))
    grown_p = _by_sequence(tops_p, B, torch.zeros(0, topk, dtype=f16))
    grown_h = _by_sequence(feats, B, torch.zeros(0, hid, dtype=f16))
    grown_l = _by_sequence(lfeats, B, torch.zeros(0, len(layers), hid, dtype=f16)) if layers else []
    for i, p in enumerate(prompts_ids):
        n = len(toks[i]) - 1
        out.append({"ids": torch.tensor(toks[i], dtype=torch.int32), "plen": len(p),
                    "feats": torch.cat([prompt_feats[i], grown_h[i]])[:n].contiguous(),
                    "topk_ids": grown_ids[i].contiguous(), "topk_p": grown_p[i].contiguous()})
        if layers:
            out[-1]["layer_feats"] = torch.cat([prompt_lfeats[i], grown_l[i]])[:n].contiguous()
            out[-1]["feat_layers"] = torch.tensor(layers, dtype=torch.int32)
    return out


def has_layer_feats(seq: dict, layers: tuple[int, ...]) -> bool:
    """Whether a stored sequence carries the states of exactly these layers."""
    have = seq.get("feat_layers")
    return have is not None and tuple(have.tolist()) == tuple(layers)


@torch.inference_mode()
def fill_layer_feats(model, data_dir, layers: tuple[int, ...]) -> int:
    """Add `layer_feats` to shards generated without them (or with other layers): one teacher-forced
    forward over each stored sequence, which gives the states the generation loop would have kept.
    Shards are rewritten one at a time, so a killed run resumes. Returns the shards filled."""
    filled = 0
    for path in shard_paths(data_dir):
        seqs = torch.load(path, weights_only=True)
        if all(has_layer_feats(s, layers) for s in seqs):
            continue
        for s in seqs:
            ids = s["ids"][None, :-1].long().to(model.device)
            out = model.model(input_ids=ids, output_hidden_states=True)
            s["layer_feats"] = torch.stack([out.hidden_states[i][0] for i in layers], 1).to(torch.float16).cpu()
            s["feat_layers"] = torch.tensor(layers, dtype=torch.int32)
        save_atomic(path, seqs)
        filled += 1
    return filled


def target_eos(model, tok=None) -> set[int]:
    """End-of-turn ids, as the decoding loop uses them (generation config, else the tokenizer's)."""
    eos = model.generation_config.eos_token_id
    if eos is None and tok is not None:
        eos = tok.eos_token_id
    return {int(e) for e in (eos if isinstance(eos, (list, tuple)) else [eos]) if e is not None}


def add_stats(out: Path, wall: float, tokens: int, seqs: int) -> None:
    path = out / "stats.json"
    st = json.loads(path.read_text()) if path.exists() else {"wall_s": 0.0, "tokens": 0, "sequences": 0}
    st["wall_s"] = round(st["wall_s"] + wall, 1)
    st["tokens"] += tokens
    st["sequences"] += seqs
    path.write_text(json.dumps(st))


def gen_stats(out) -> dict:
    path = Path(out) / "stats.json"
    return json.loads(path.read_text()) if path.exists() else {}


def main(argv=None):
    ap = argparse.ArgumentParser(description="generate self-distillation data from the bundled target")
    ap.add_argument("--target", default=BUNDLED_ID)
    ap.add_argument("--out", default=str(DEFAULT_DIR))
    ap.add_argument("--prompts", default=None, help="jsonl of prompts (default: the built-in set)")
    ap.add_argument("--tokens", type=int, default=500_000, help="stop after this many response tokens")
    ap.add_argument("--max-prompts", type=int, default=0)
    ap.add_argument("--first-prompt", type=int, default=0,
                    help="start at this prompt (rounded down to a batch boundary, so shard names stay aligned)")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--max-new", type=int, default=256)
    ap.add_argument("--topk", type=int, default=20)
    ap.add_argument("--threads", type=int, default=2)
    device_arg(ap)
    ap.add_argument("--layer-feats", action="store_true",
                    help="also keep the states a fused head reads (a low and a middle layer's; triples the "
                         "data) and add them to shards made without them")
    args = ap.parse_args(argv)
    run_generation(args)


def run_generation(args):
    tuner = ThreadTuner(args.threads)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    plist = out / "prompts.jsonl"
    if args.prompts:
        prompts = read_prompts(args.prompts)
    elif plist.exists():
        prompts = read_prompts(plist)
    else:
        prompts = write_prompts(plist)
    if args.max_prompts:
        prompts = prompts[: args.max_prompts]
    tok = load_tokenizer(args.target)
    model = load_target(args.target, getattr(args, "device", "auto"))
    eos = target_eos(model, tok)
    layers = fused_layers(model.config.num_hidden_layers) if getattr(args, "layer_feats", False) else ()
    if layers and (n := fill_layer_feats(model, out, layers)):
        print(f"added the layer {list(layers)} features to {n} existing shards", flush=True)
    have = count_tokens(out)
    bar = tqdm(total=args.tokens, initial=min(have, args.tokens), unit="tok", desc="generate",
               mininterval=5)
    first = getattr(args, "first_prompt", 0) // args.batch * args.batch
    for start in range(first, len(prompts), args.batch):
        if have >= args.tokens:
            break
        b = start // args.batch
        path = out / f"shard_{b:05d}.pt"
        if path.exists():
            continue
        t_shard = time.time()
        batch = [encode_prompt(tok, p) for p in prompts[start: start + args.batch]]
        seqs = generate_batch(model, batch, args.max_new, args.topk, eos, tuner, layers)
        for s, i in zip(seqs, range(start, start + len(seqs))):
            s["prompt_index"] = i
        save_atomic(path, seqs)
        n = sum(int(s["ids"].numel() - s["plen"]) for s in seqs)
        have += n
        add_stats(out, time.time() - t_shard, n, len(seqs))
        bar.update(n)
        bar.set_postfix(shard=b, threads=tuner.current)
    bar.close()
    print(f"done: {have} response tokens in {out}", flush=True)


if __name__ == "__main__":
    raise SystemExit(guarded(main))
