"""Training the EAGLE-style feature head on the self-distillation data.

Pairs (target feature at j-1, embedding of token j) -> predicted feature at j -> LM-head logits for
token j+1 (`--fused`: the target feature is the fused head's, from a low, a middle and the last
layer). Besides the usual one-step loss, the head is unrolled on its own predictions for
`--unroll` depths in parallel ("training-time test"): at depth k the chain rooted at pair a feeds its
own depth-(k-1) feature with the true token a+k, attending to the true prefix (pairs <= a) and to its
own earlier depths only, exactly what a tree node sees at decode time. Losses: soft cross-entropy
against the target's top-k probabilities (in the reduced draft vocabulary) at every depth, plus a
small feature-regression term at depth 1; Gaussian noise on the input features.
"""

from __future__ import annotations

from pathlib import Path

import torch
import torch.nn.functional as F

from opttree.nets.attention_mask import additive_mask
from opttree.nets.feature_head import FeatureHead, fused_layers, head_config_from_target
from opttree.train import data as D
from opttree.train.common import export_fp16, load_checkpoint
from opttree.train.generate import target_eos
from opttree.train.loop import device_of, init_from, train_loop


def depth_mask(n: int, k: int, dtype, device=None) -> torch.Tensor:
    """(n, k*n) additive mask for depth k >= 2: true prefix (b <= a) + own earlier depths (b == a)."""
    prefix = torch.ones(n, n, dtype=torch.bool, device=device).tril()
    own = torch.eye(n, dtype=torch.bool, device=device)
    return additive_mask(torch.cat([prefix] + [own] * (k - 1), dim=1), dtype)[0, 0]


def unrolled(head, embed, batch: dict, depth: int, noise: float = 0.0):
    """Per-depth predicted features [F_1 .. F_depth], each (B, n, h) with n = L - 1 chains."""
    from transformers import DynamicCache  # transformers is heavy: imported when a model is built

    ids, feats = batch["ids"], batch["feats"]
    B, L = ids.shape
    n = L - 1
    prev = head.input_features(feats[:, :n])
    if noise > 0:
        prev = prev + noise * torch.randn_like(prev)
    cache = DynamicCache(config=head.decoder.config)
    pad_ids = torch.cat([ids, ids.new_zeros(B, depth)], 1)
    base_pos = torch.arange(n, device=ids.device)[None].expand(B, n)
    outs = []
    for k in range(1, depth + 1):
        tok = embed(pad_ids[:, k: k + n])
        pos = base_pos + k
        mask = None if k == 1 else depth_mask(n, k, prev.dtype, ids.device)[None, None].expand(B, 1, n, k * n)
        out = head.features(prev, tok, pos, mask, cache)
        outs.append(out)
        prev = out
    return outs


def depth_targets(batch: dict, k: int, n: int):
    """Targets for depth-k chains a = 0..n-1: the target's distribution at position a+k."""
    B, L = batch["ids"].shape
    pos = torch.arange(n, device=batch["ids"].device) + k
    ok = pos < L
    pos = pos.clamp(max=L - 1)
    tk_ids = batch["tk_ids"][:, pos]
    tk_p = batch["tk_p"][:, pos] * ok[None, :, None]
    return tk_ids, tk_p


def head_losses(head, W, full_to_draft, outs, batch, weights, feat_scale, reg_w):
    """Returns total loss, and per depth the (right, valid) masks of top-1 agreement, (B, n)."""
    n = outs[0].shape[1]
    total = 0.0
    stats = []
    for k, out in enumerate(outs, start=1):
        tk_ids, tk_p = depth_targets(batch, k, n)
        idx, w, valid = D.soft_targets(tk_ids, tk_p, full_to_draft)
        # Logits only where a target exists: prompt and padding rows would cost LM-head time for nothing.
        logits = out[valid] @ W.T
        logq = torch.log_softmax(logits.float(), -1)
        ce = -(w[valid] * logq.gather(-1, idx[valid])).sum(-1)
        total = total + weights[k - 1] * ce.sum() / valid.sum().clamp(min=1)
        pred = logits.argmax(-1)
        if head.vocab_ids.numel():
            pred = head.vocab_ids[pred]
        right = torch.zeros_like(valid)
        right[valid] = pred == tk_ids[..., 0][valid]
        stats.append((right, valid))
    if reg_w > 0:
        feats, lens = batch["feats"], batch["lens"]
        tgt = feats[:, 1: n + 1, -outs[0].shape[-1]:]   # the next last-layer feature
        ok = (torch.arange(n, device=lens.device)[None] + 1) <= (lens[:, None] - 2)
        reg = F.smooth_l1_loss(outs[0].float() / feat_scale, tgt / feat_scale, reduction="none").mean(-1)
        total = total + reg_w * (reg * ok).sum() / ok.sum().clamp(min=1)
    return total, stats


@torch.no_grad()
def evaluate(head, embed, W, full_to_draft, seqs, depth: int = 5, tokens_per_batch: int = 2048):
    """Held-out top-1 agreement per depth (given a correct prefix, drafting from its own predicted
    features), and the cumulative chain agreement (all of depths 1..d right)."""
    head.eval()
    right = [0] * depth
    count = [0] * depth
    chain = [0] * depth
    for group in D.batches(seqs, tokens_per_batch):
        batch = D.collate(group, device=device_of(head))
        outs = unrolled(head, embed, batch, depth)
        _, stats = head_losses(head, W, full_to_draft, outs, batch, [1.0] * depth, 1.0, 0.0)
        ok = None
        for i, (r, v) in enumerate(stats):
            right[i] += int(r.sum())
            count[i] += int(v.sum())
            ok = r if ok is None else ok & r
            chain[i] += int((ok & v).sum())
    head.train()
    return ([r / max(1, c) for r, c in zip(right, count)], [r / max(1, c) for r, c in zip(chain, count)])


def init_from_target(head, target, layer: bool = False) -> None:
    """Start the final norm (and optionally the decoder layer) from the target's last ones."""
    with torch.no_grad():
        if layer:
            src = target.model.layers[-1].state_dict()
            for lay in head.decoder.layers:
                lay.load_state_dict(src)
        head.decoder.norm.weight.copy_(target.model.norm.weight)


def _resumed_vocab(args, fresh: torch.Tensor, name: str = "head") -> torch.Tensor:
    """A resumed head keeps the draft vocabulary it was trained with: more data can reorder the most
    frequent tokens, and the checkpoint's weights only make sense over their own vocabulary."""
    if not args.resume:
        return fresh
    ck = load_checkpoint(Path(args.ckpt_dir) / f"{name}.pt")
    old = (ck or {}).get("model", (ck or {}).get("head", {})).get("vocab_ids")
    return old.clone() if old is not None and old.numel() == fresh.numel() else fresh


def _draft_vocab(args, target, train) -> tuple[torch.Tensor, float]:
    """The head's draft vocabulary and its coverage of the training data: the data's most frequent
    tokens (kept from the checkpoint on --resume), or with --init-vocab the --init-from draft's own."""
    if getattr(args, "init_vocab", False):
        if not args.init_from:
            raise SystemExit("--init-vocab keeps the --init-from draft's vocabulary: name one with --init-from.")
        from safetensors.torch import load_file  # imported with the weights it reads or writes

        vocab_ids = load_file(str(args.init_from))["vocab_ids"].long()
        return vocab_ids, D.vocab_coverage(train, vocab_ids)
    if not args.draft_vocab:
        return torch.zeros(0, dtype=torch.long), 1.0
    vocab_ids, cover = D.draft_vocab(train, args.draft_vocab, always=target_eos(target))
    if (kept := _resumed_vocab(args, vocab_ids, run_name(args))) is not vocab_ids:
        vocab_ids, cover = kept, D.vocab_coverage(train, kept)
    return vocab_ids, cover


def run_name(args) -> str:
    """The run's checkpoint and progress name: a fused and a plain head can train side by side."""
    return "fused-head" if getattr(args, "fused", False) else "head"


def train_head(args, target, train, test) -> dict:
    torch.manual_seed(args.seed)
    embed = target.get_input_embeddings()
    lm_w = target.get_output_embeddings().weight
    vocab_ids, cover = _draft_vocab(args, target, train)
    cfg = head_config_from_target(target.config, layers=args.layers, draft_vocab=int(vocab_ids.numel()))
    if getattr(args, "fused", False):
        cfg["fused_layers"] = list(fused_layers(target.config.num_hidden_layers))
        D.fuse_layer_feats(train + test, tuple(cfg["fused_layers"]))
    head = FeatureHead(cfg).to(lm_w.device)      # trains where its target is (--device)
    if vocab_ids.numel():
        head.vocab_ids.copy_(vocab_ids)
    init_from_target(head, target, layer=args.init_layer)
    if args.init_from:
        init_from(head, args.init_from)
    full_to_draft = None
    W = lm_w
    if vocab_ids.numel():
        full_to_draft, W = D.draft_rows(lm_w, vocab_ids)
    h = cfg["hidden_size"]
    feat_scale = float(torch.cat([s["feats"][:64, -h:].float() for s in train[:64]]).std())
    weights = [args.depth_decay ** i for i in range(args.unroll)]
    noise = args.noise * feat_scale

    def forward(batch):
        outs = unrolled(head, embed, batch, args.unroll, noise)
        loss, stats = head_losses(head, W, full_to_draft, outs, batch, weights, feat_scale, args.reg)
        return loss, int(stats[0][0].sum()) / max(1, int(stats[0][1].sum()))

    def heldout():
        accs, chain = evaluate(head, embed, W, full_to_draft, test)
        return ({"heldout_top1": [round(a, 4) for a in accs], "chain": [round(a, 4) for a in chain]},
                f"held-out top-1 by depth {[round(a, 3) for a in accs]}")

    res = train_loop(args, run_name(args), head, cfg, train, forward, heldout, lambda: export_head(head, args.out, cfg))
    last = res["history"][-1]
    return {"kind": "head", **res, "heldout_top1_by_depth": last["heldout_top1"],
            "heldout_chain_agreement_by_depth": last["chain"],
            "draft_vocab": int(vocab_ids.numel()), "draft_vocab_coverage": round(cover, 4), "config": cfg,
            "hparams": {k: getattr(args, k) for k in ("lr", "batch_tokens", "unroll", "noise", "reg",
                                                      "depth_decay", "layers", "seed", "max_len", "bf16", "fused",
                                                      "init_vocab")}}


def export_head(head, out, cfg) -> int:
    return export_fp16(Path(out), head.state_dict(), cfg)


def add_args(ap) -> None:
    ap.add_argument("--draft-vocab", type=int, default=12288, help="0 = full target vocabulary")
    ap.add_argument("--unroll", type=int, default=3, help="depths trained on own predictions")
    ap.add_argument("--depth-decay", type=float, default=0.7)
    ap.add_argument("--noise", type=float, default=0.1, help="input feature noise (x feature std)")
    ap.add_argument("--reg", type=float, default=0.2, help="feature regression weight")
    ap.add_argument("--init-layer", action="store_true", help="start the head's layer from the target's last")
    ap.add_argument("--init-vocab", action="store_true",
                    help="with --init-from: keep that draft's vocabulary (its vocab_ids) instead of the data's "
                         "most frequent tokens, so that step 0 is that draft exactly")
    ap.add_argument("--fused", action="store_true",
                    help="a fused head (EAGLE-3): reads a low and a middle layer besides the last; "
                         "--init-from a plain head starts it as that head")
