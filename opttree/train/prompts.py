"""The training prompt set: a frozen JSONL file (`opttree/assets/prompts/train.jsonl`), read here.

Each line is {"id", "part", "heldout", "text"}. The line's position is the prompt index stored in
generated data shards; the id and the held-out flag travel with the text, so the train/held-out
split is a property of each prompt, not of where it sits in a list. New prompts are appended as new
lines with new ids (a new `part`); an existing line is never edited or reordered (a test pins the
file's hash). The evaluation prompts (`eval.jsonl`) are written separately and are checked to be
disjoint from this set (tests/engine/test_drafts.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from opttree import paths

# The parts the held-out fit prompts come from: the prompts that fit a draft's tree temperature
# (card.heldout_questions) and the length predictor's are drawn from these only, so every card's
# fit reads the same prompts and a newly appended part changes neither until it is added here.
FIT_PARTS = (1, 2, 3, 4)

# Long pasted inputs (summarise / answer about / translate a given passage of 300-1,000 words), in the
# eval set's format: frozen, measured and reported apart from the eval set, never trained on
# (docs/drafts.md, "ShareGPT conversations"; tests/unit/test_long_input.py pins it).
LONG_INPUT_PROMPTS = paths.PROMPTS / "long_input.jsonl"


@dataclass(frozen=True)
class TrainPrompt:
    id: str
    part: int
    heldout: bool
    text: str


@lru_cache(maxsize=2)
def train_prompts(path: str | None = None) -> tuple[TrainPrompt, ...]:
    """Every training prompt in index order."""
    with open(path or paths.TRAIN_PROMPTS, encoding="utf-8") as f:
        return tuple(TrainPrompt(**json.loads(line)) for line in f if line.strip())


def build_prompts() -> list[str]:
    """The prompt texts in index order (the order the data generator uses)."""
    return [p.text for p in train_prompts()]


def is_heldout(prompt_index: int) -> bool:
    """Whether the prompt a data shard was generated from is held out (its own frozen flag)."""
    prompts = train_prompts()
    return 0 <= int(prompt_index) < len(prompts) and prompts[int(prompt_index)].heldout


def write_prompts(path: str | Path) -> list[str]:
    """Copy the prompt texts to a data folder's `prompts.jsonl` (what the generator reads back)."""
    prompts = build_prompts()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for i, p in enumerate(prompts):
            f.write(json.dumps({"id": i, "prompt": p}, ensure_ascii=False) + "\n")
    return prompts


def read_prompts(path: str | Path) -> list[str]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line)["prompt"] for line in f if line.strip()]
