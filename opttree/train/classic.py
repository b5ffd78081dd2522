"""Training the classic (independent) draft LM: a small LlamaForCausalLM distilled from the target.

Initialisation: the target's token embedding (frozen, tied LM head, rebuilt from the target at load
time instead of stored), `--layers` of the target's decoder layers (by default the first ones) and
its final norm. Training: soft cross-entropy against the target's top-k probabilities on the
generated responses, plus a small regression of the draft's final hidden state onto the target's.
Token-only inputs and its own KV cache: usable as a transformers `assistant_model`.
"""

from __future__ import annotations

from pathlib import Path

import torch
import torch.nn.functional as F

from opttree.train import data as D
from opttree.train.common import export_fp16
from opttree.train.generate import target_eos
from opttree.train.loop import device_of, init_from, train_loop

SHARED = {"model.embed_tokens.weight": "model.embed_tokens.weight"}


def draft_config(target, layers: int) -> dict:
    cfg = target.config.to_dict()
    cfg["num_hidden_layers"] = layers
    if isinstance(cfg.get("layer_types"), list):
        cfg["layer_types"] = cfg["layer_types"][:layers]
    cfg["tie_word_embeddings"] = True
    for k in ("_name_or_path", "architectures", "transformers_version", "torch_dtype", "dtype",
              "_attn_implementation_autoset"):
        cfg.pop(k, None)
    cfg["architectures"] = ["LlamaForCausalLM"]
    return cfg


def build_draft(target, layers: int, source_layers: list[int] | None = None):
    from transformers import AutoConfig, AutoModelForCausalLM  # transformers is heavy: imported when a model is built

    cfg_dict = draft_config(target, layers)
    cfg = AutoConfig.for_model(**cfg_dict)
    cfg._attn_implementation = "sdpa"
    model = AutoModelForCausalLM.from_config(cfg)
    src = source_layers or list(range(layers))
    with torch.no_grad():
        model.model.embed_tokens.weight.copy_(target.model.embed_tokens.weight)
        for i, j in enumerate(src):
            model.model.layers[i].load_state_dict(target.model.layers[j].state_dict())
        model.model.norm.weight.copy_(target.model.norm.weight)
    model.tie_weights()
    model.model.embed_tokens.weight.requires_grad_(False)
    model.generation_config.eos_token_id = target.generation_config.eos_token_id
    model.generation_config.pad_token_id = target.generation_config.pad_token_id
    return model, cfg_dict


def classic_losses(model, batch, feat_scale, reg_w, vocab=None):
    """Soft CE against the target's top-k (over `vocab` = (ids, full_to_draft) when given: a sampled
    softmax over the frequent tokens, much cheaper than the 49k-way one) + feature regression."""
    ids, lens = batch["ids"], batch["lens"]
    B, L = ids.shape
    pos = torch.arange(L, device=ids.device)[None].expand(B, L)
    hid = model.model(input_ids=ids, position_ids=pos).last_hidden_state  # (B, L, h)
    valid = batch["tk_p"].sum(-1) > 0
    h = hid[valid]
    emb = model.model.embed_tokens.weight
    tk_ids, tk_p = batch["tk_ids"][valid], batch["tk_p"][valid]
    if vocab is not None:
        vocab_ids, full_to_draft = vocab
        logits = h @ emb[vocab_ids].T
        idx, w, ok = D.soft_targets(tk_ids, tk_p, full_to_draft)
        right = vocab_ids[logits.argmax(-1)] == tk_ids[:, 0]
    else:
        logits = h @ emb.T
        idx, w = tk_ids, tk_p / tk_p.sum(-1, keepdim=True)
        ok = torch.ones(len(idx), dtype=torch.bool, device=idx.device)
        right = logits.argmax(-1) == tk_ids[:, 0]
    logq = torch.log_softmax(logits.float(), -1)
    loss = (-(w * logq.gather(-1, idx)).sum(-1) * ok).sum() / ok.sum().clamp(min=1)
    if reg_w > 0:
        okr = torch.arange(L, device=lens.device)[None] <= (lens[:, None] - 2)
        tgt = batch["feats"]
        reg = F.smooth_l1_loss(hid / feat_scale, tgt / feat_scale, reduction="none").mean(-1)
        loss = loss + reg_w * (reg * okr).sum() / okr.sum().clamp(min=1)
    return loss, right, valid


@torch.no_grad()
def evaluate(model, seqs, depth: int = 5, tokens_per_batch: int = 2048):
    """Top-1 agreement (teacher forced, so the same at every depth given a correct prefix) and the
    cumulative chain agreement: the share of roots whose next d greedy drafts all match."""
    model.eval()
    right_all, cum = [], [[0, 0] for _ in range(depth)]
    for group in D.batches(seqs, tokens_per_batch):
        batch = D.collate(group, device=device_of(model))
        _, right, valid = classic_losses(model, batch, 1.0, 0.0)
        right, valid = right.cpu(), valid.cpu()      # the chain count below walks them row by row
        full = torch.zeros_like(valid)
        full[valid] = right
        right_all.append(right)
        for b in range(valid.shape[0]):
            v = valid[b].nonzero().flatten()
            r = full[b, v]
            ok = torch.ones(len(r), dtype=torch.bool)
            for d in range(depth):
                n = len(r) - d
                if n <= 0:
                    break
                ok = ok[:n] & r[d: d + n]
                cum[d][0] += int(ok.sum())
                cum[d][1] += n
    model.train()
    top1 = float(torch.cat(right_all).float().mean()) if right_all else 0.0
    return top1, [c[0] / max(1, c[1]) for c in cum]


def train_classic(args, target, train, test) -> dict:
    torch.manual_seed(args.seed)
    src = [int(x) for x in args.source_layers.split(",")] if args.source_layers else None
    model, cfg = build_draft(target, args.layers, src)
    model.to(target.device)            # trains where its target is (--device)
    if args.init_from:
        init_from(model, args.init_from)
    feat_scale = float(torch.cat([s["feats"][:64].float() for s in train[:64]]).std())
    vocab = None
    if args.draft_vocab:
        vocab_ids, _ = D.draft_vocab(train, args.draft_vocab, always=target_eos(target))
        full_to_draft = D.vocab_map(vocab_ids, target.config.vocab_size, target.device)
        vocab = (vocab_ids.to(target.device), full_to_draft)

    def forward(batch):
        loss, right, _ = classic_losses(model, batch, feat_scale, args.reg, vocab)
        return loss, float(right.float().mean())

    def heldout():
        top1, cum = evaluate(model, test)
        return ({"heldout_top1": round(top1, 4), "cumulative": [round(c, 4) for c in cum]},
                f"held-out top-1 {top1:.3f} chain {[round(c, 3) for c in cum]}")

    res = train_loop(args, "classic", model, cfg, train, forward, heldout,
                     lambda: export_classic(model, args.out, cfg))
    last = res["history"][-1]
    return {"kind": "classic", **res,
            "heldout_top1_by_depth": [last["heldout_top1"]] * 5,
            "heldout_chain_agreement_by_depth": last["cumulative"],
            "source_layers": src or list(range(args.layers)),
            "train_softmax_vocab": int(vocab[0].numel()) if vocab else 0,
            "hparams": {k: getattr(args, k) for k in ("lr", "batch_tokens", "reg", "layers", "seed", "max_len",
                                                      "bf16")}}


def export_classic(model, out, cfg) -> int:
    state = {k: v for k, v in model.state_dict().items() if k not in SHARED and k != "lm_head.weight"}
    return export_fp16(Path(out), state, cfg, {"from_target": SHARED})


def add_args(ap) -> None:
    ap.add_argument("--source-layers", default="", help="target layers to start from, e.g. 0,1,2")
