"""Training the early-exit head (EESD's self-distillation) on the generated data.

Input: the target's hidden states after its first N layers, computed once per sequence with the
target's own layers (`drafters/early_exit.first_layers`, the code the drafter runs). The exit head
(`--layers` decoder layers, started from the target's layers N.., and a final norm, from the target's)
turns them into logits through the target's frozen LM head; the loss is the soft cross-entropy
against the target's own top-k probabilities for the next token (self-distillation), over the
reduced draft vocabulary.

No unrolling ("training-time test") is needed, unlike the feature head: at decode time the first N
layers run exactly, so a tree node at any depth reads the hidden state the target itself would have
there, and the head never sees its own predictions as inputs. Agreement at depth d given a correct
prefix is therefore the depth-1 agreement; the chain agreement (all of depths 1..d right) is what
falls with depth.
"""

from __future__ import annotations

from pathlib import Path

import torch

from opttree.drafters.early_exit import first_layers
from opttree.nets.attention_mask import causal_mask
from opttree.nets.exit_head import ExitHead, exit_config
from opttree.train import data as D
from opttree.train.common import export_fp16
from opttree.train.generate import target_eos
from opttree.train.head import _resumed_vocab, head_losses
from opttree.train.loop import device_of, init_from, train_loop


@torch.no_grad()
def add_exit_states(target, seqs: list[dict], n: int, tokens_per_batch: int = 4096) -> None:
    """Replace each sequence's `feats` with the target's hidden states after layer n at positions
    0..L-2 (fp16), the rows that have a next-token target."""
    for group in D.batches(seqs, tokens_per_batch):
        L = max(int(s["ids"].numel()) for s in group)
        ids = torch.zeros(len(group), L, dtype=torch.long)
        for b, s in enumerate(group):
            ids[b, : s["ids"].numel()] = s["ids"].long()
        ids = ids.to(target.device)
        pos = torch.arange(L, device=ids.device)[None].expand(len(group), L)
        # right padding: later rows never reach earlier ones; a windowed target's layers keep their windows
        mask = causal_mask(0, L, torch.float32, ids.device, target.config)
        hidden = first_layers(target, ids, pos, mask, None, n)
        for b, s in enumerate(group):
            s["feats"] = hidden[b, : s["ids"].numel() - 1].to(torch.float16).cpu().contiguous()


def exit_outputs(head, batch: dict) -> torch.Tensor:
    """The exit head over a batch, shifted so that row a is position a+1: the alignment `head_losses`
    gives the feature head's depth 1 (its row a reads token a+1 and predicts token a+2)."""
    feats = batch["feats"]
    B, L = feats.shape[:2]
    pos = torch.arange(L, device=feats.device)[None].expand(B, L)
    return head.exit_features(feats, pos, None, None)[:, 1:]


@torch.no_grad()
def evaluate(head, W, full_to_draft, seqs, depth: int = 5, tokens_per_batch: int = 2048):
    """Held-out top-1 agreement (any depth, given a correct prefix) and the chain agreement by depth:
    the share of positions where the next d draft tokens would all be the target's."""
    head.eval()
    right = count = 0
    chain = [0] * depth
    for group in D.batches(seqs, tokens_per_batch):
        batch = D.collate(group, device=device_of(head))
        _, [(r, v)] = head_losses(head, W, full_to_draft, [exit_outputs(head, batch)], batch, [1.0], 1.0, 0.0)
        right += int(r.sum())
        count += int(v.sum())
        ok = r & v
        run = ok.clone()
        chain[0] += int(run.sum())
        for d in range(1, depth):       # run[a]: positions a .. a+d all right
            run = run[:, :-1] & ok[:, d:]
            chain[d] += int(run.sum())
    head.train()
    return right / max(1, count), [c / max(1, count) for c in chain]


def init_from_target(head: ExitHead, target) -> None:
    """The k exit layers start as the target's layers N .. N+k-1 (the ones they stand in for), the norm
    as the target's final norm: before training, the draft is the target cut after N+k layers."""
    with torch.no_grad():
        for i, layer in enumerate(head.decoder.layers):
            layer.load_state_dict(target.model.layers[head.exit_layer + i].state_dict())
        head.decoder.norm.weight.copy_(target.model.norm.weight)


def train_exit_head(args, target, train, test) -> dict:
    torch.manual_seed(args.seed)
    n = args.exit_layer
    if n + args.layers > target.config.num_hidden_layers:
        raise SystemExit(f"--exit-layer {n} with --layers {args.layers}: the exit layers start as the target's "
                         f"layers {n}..{n + args.layers - 1}, and it has {target.config.num_hidden_layers}.")
    lm_w = target.get_output_embeddings().weight
    vocab_ids, cover = torch.zeros(0, dtype=torch.long), 1.0
    if args.draft_vocab:
        vocab_ids, cover = D.draft_vocab(train, args.draft_vocab, always=target_eos(target))
        if (kept := _resumed_vocab(args, vocab_ids, f"early-exit-{n}")) is not vocab_ids:
            vocab_ids, cover = kept, D.vocab_coverage(train, kept)
    cfg = exit_config(target.config, n, draft_vocab=int(vocab_ids.numel()), layers=args.layers)
    head = ExitHead(cfg).to(lm_w.device)      # trains where its target is (--device)
    if vocab_ids.numel():
        head.vocab_ids.copy_(vocab_ids)
    init_from_target(head, target)
    if args.init_from:
        init_from(head, args.init_from)
    full_to_draft, W = None, lm_w
    if vocab_ids.numel():
        full_to_draft, W = D.draft_rows(lm_w, vocab_ids)
    print(f"computing the target's layer-{n} states for {len(train) + len(test)} sequences", flush=True)
    add_exit_states(target, train + test, n)

    def forward(batch):
        loss, [(r, v)] = head_losses(head, W, full_to_draft, [exit_outputs(head, batch)], batch, [1.0], 1.0, 0.0)
        return loss, int(r.sum()) / max(1, int(v.sum()))

    def heldout():
        top1, chain = evaluate(head, W, full_to_draft, test)
        return ({"heldout_top1": [round(top1, 4)], "chain": [round(c, 4) for c in chain]},
                f"held-out top-1 {top1:.3f}, chain by depth {[round(c, 3) for c in chain]}")

    res = train_loop(args, f"early-exit-{n}", head, cfg, train, forward, heldout,
                     lambda: export_fp16(Path(args.out), head.state_dict(), cfg))
    last = res["history"][-1]
    return {"kind": "early-exit", "exit_layer": n, **res, "heldout_top1_by_depth": last["heldout_top1"],
            "heldout_chain_agreement_by_depth": last["chain"],
            "draft_vocab": int(vocab_ids.numel()), "draft_vocab_coverage": round(cover, 4), "config": cfg,
            "hparams": {k: getattr(args, k) for k in ("lr", "batch_tokens", "seed", "max_len", "bf16", "layers")}}


def add_args(ap) -> None:
    ap.add_argument("--exit-layer", type=int, default=1, metavar="N",
                    help="early-exit: the head reads the target's hidden state after its first N layers (the "
                         "shipped head: 1, chosen by benchmarks/early_exit_sweep.sh)")
