"""Loading the generated shards for training: held-out split, draft vocabulary, padded batches."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import torch

from opttree.train.generate import has_layer_feats, iter_shards
from opttree.train.prompts import is_heldout


def split(seqs: list[dict]) -> tuple[list[dict], list[dict]]:
    """Train / held-out by each sequence's own `heldout` flag where it has one (teacher-forced
    conversations: opttree/train/teacher_forcing.py), else by its prompt's frozen flag."""
    train, test = [], []
    for s in seqs:
        held = bool(s["heldout"]) if "heldout" in s else is_heldout(s.get("prompt_index", 0))
        (test if held else train).append(s)
    return train, test


def load_split(data_dirs, max_tokens: int = 0, layer_feats: bool = False):
    """Train / held-out sequences of one data folder or several (in order; e.g. the training prompts'
    own answers and a ShareGPT recipe's); `layer_feats`: keep the lower layers' features (only a
    fused head reads them, and they take twice the memory of the rest)."""
    dirs = [data_dirs] if isinstance(data_dirs, (str, Path)) else list(data_dirs)
    seqs, n = [], 0
    # Shards load lazily, and the loop stops as soon as the budget is reached: shards past it are
    # never read, so peak memory follows the budget.
    for s in (s for d in dirs for shard in iter_shards(d, layer_feats) for s in shard):
        seqs.append(s)
        n += target_tokens(s)
        if max_tokens and n >= max_tokens:
            break
    train, test = split(seqs)
    if not test and len(train) > 1:  # tiny data (tests): keep one sequence aside anyway
        test = train[-1:]
        train = train[:-1]
    return train, test


def fuse_layer_feats(seqs: list[dict], layers: tuple[int, ...]) -> None:
    """Give each sequence the fused head's input rows in place: `feats` becomes the lower layers'
    states and the last layer's side by side, (L-1, (len(layers) + 1) * h), as decoding hands them."""
    for s in seqs:
        if not has_layer_feats(s, layers):
            raise SystemExit(f"the data has no layer {list(layers)} features: run python -m opttree.train.generate "
                             "--layer-feats (it adds them to existing shards) before training a fused head.")
        low = s.pop("layer_feats")
        s["feats"] = torch.cat([low.flatten(1), s["feats"]], -1).contiguous()


def target_tokens(seq: dict) -> int:
    """Positions with a training target: every response token of generated data; of a teacher-forced
    conversation only the assistant turns' (its other rows carry zero probability)."""
    return int((seq["topk_p"][:, 0] > 0).sum())


def response_tokens(seqs: list[dict]) -> int:
    return sum(target_tokens(s) for s in seqs)


def draft_vocab(seqs: list[dict], size: int, always: set[int] = frozenset()) -> tuple[torch.Tensor, float]:
    """The `size` most frequent target tokens (greedy tokens + top-k candidates, weighted).

    Returns sorted ids and the share of greedy response tokens they cover."""
    counts: Counter = Counter()
    for s in seqs:
        counts.update(s["ids"][s["plen"]:].tolist())
        counts.update(s["ids"][: s["plen"]].tolist())
        counts.update(s["topk_ids"][:, :4].flatten().tolist())
    ids = [t for t in always] + [t for t, _ in counts.most_common() if t not in always]
    ids = torch.tensor(sorted(ids[:size]), dtype=torch.long)
    return ids, vocab_coverage(seqs, ids)


def vocab_map(vocab_ids: torch.Tensor, target_vocab: int, device) -> torch.Tensor:
    """Each target token's column in a draft vocabulary (-1 outside it), on `device`."""
    full_to_draft = torch.full((target_vocab,), -1, dtype=torch.long, device=device)
    full_to_draft[vocab_ids.to(device)] = torch.arange(vocab_ids.numel(), device=device)
    return full_to_draft


def draft_rows(lm_w: torch.Tensor, vocab_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """For a head over a draft vocabulary: `vocab_map` and a copy of the LM head's rows of its tokens,
    both on the LM head's device."""
    return vocab_map(vocab_ids, lm_w.shape[0], lm_w.device), lm_w[vocab_ids.to(lm_w.device)].detach().clone()


def vocab_coverage(seqs: list[dict], ids: torch.Tensor) -> float:
    """The share of greedy response tokens that a draft vocabulary `ids` contains."""
    keep = torch.zeros(int(max(int(s["ids"].max()) for s in seqs) + 1) if seqs else 1, dtype=torch.bool)
    keep[ids[ids < keep.numel()]] = True
    hits = total = 0
    for s in seqs:
        resp = s["ids"][s["plen"]:].long()
        hits += int(keep[resp].sum())
        total += resp.numel()
    return hits / max(1, total)


def batches(seqs: list[dict], tokens_per_batch: int, rng: random.Random | None = None,
            max_len: int = 0) -> list[list[dict]]:
    """Length-bucketed batches of about `tokens_per_batch` padded tokens, in random order."""
    order = sorted(seqs, key=lambda s: int(s["ids"].numel()))
    out, cur = [], []
    for s in order:
        L = int(s["ids"].numel()) if not max_len else min(max_len, int(s["ids"].numel()))
        if cur and (len(cur) + 1) * L > tokens_per_batch:
            out.append(cur)
            cur = []
        cur.append(s)
    if cur:
        out.append(cur)
    if rng is not None:
        rng.shuffle(out)
    return out


def collate(batch: list[dict], max_len: int = 0, device=None) -> dict:
    """Right-padded tensors (on `device`, where the draft trains, when given). Position j has: ids[j],
    feats[j] (target feature at j, j <= L-2) and targets for token j+1: tk_ids[j], tk_p[j] (zero
    probability where no target exists)."""
    lens = [int(s["ids"].numel()) for s in batch]
    L = max(lens) if not max_len else min(max_len, max(lens))
    B = len(batch)
    h = batch[0]["feats"].shape[-1]
    k = batch[0]["topk_ids"].shape[-1]
    ids = torch.zeros(B, L, dtype=torch.long)
    feats = torch.zeros(B, L, h)
    tk_ids = torch.zeros(B, L, k, dtype=torch.long)
    tk_p = torch.zeros(B, L, k)
    for b, s in enumerate(batch):
        n = min(lens[b], L)
        ids[b, :n] = s["ids"][:n].long()
        f = s["feats"][: n]
        feats[b, : f.shape[0]] = f.float()
        P = s["plen"]
        rows = s["topk_ids"].shape[0]  # positions P-1 .. P-2+rows
        stop = min(P - 1 + rows, L)
        if stop > P - 1:
            tk_ids[b, P - 1: stop] = s["topk_ids"][: stop - P + 1].long()
            tk_p[b, P - 1: stop] = s["topk_p"][: stop - P + 1].float()
    out = {"ids": ids, "feats": feats, "tk_ids": tk_ids, "tk_p": tk_p, "lens": torch.tensor(lens)}
    return out if device is None else {k: v.to(device, non_blocking=True) for k, v in out.items()}


def soft_targets(tk_ids: torch.Tensor, tk_p: torch.Tensor, full_to_draft: torch.Tensor | None):
    """Map top-k targets into the draft vocabulary (dropping ids outside it) and renormalise.

    Returns (index, weight, valid) with weights summing to 1 on valid rows."""
    if full_to_draft is not None:
        idx = full_to_draft[tk_ids]
        w = torch.where(idx >= 0, tk_p, torch.zeros_like(tk_p))
        idx = idx.clamp(min=0)
    else:
        idx, w = tk_ids, tk_p
    total = w.sum(-1, keepdim=True)
    valid = total.squeeze(-1) > 0
    return idx, w / total.clamp(min=1e-8), valid
