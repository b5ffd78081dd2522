"""Spec-Bench's public questions: the acceptance sets the drafts' goals are read on.

Spec-Bench (Xia et al., 2024; github.com/hemingkx/Spec-Bench, Apache-2.0) gathers 480 questions that
nobody here wrote or chose: MT-bench's 80 (question ids 81-160, ten in each of eight categories), then
80 each of translation (WMT14 de-en), summarization (CNN/DailyMail articles), qa (Natural Questions),
math_reasoning (GSM8K) and rag (Natural Questions with retrieved passages). Summarization and rag hand
the model a long passage, 3,100-3,400 characters on average.

They are the project's acceptance sets: no training prompt, setting or draft is written, tuned or
chosen by looking at them. A released draft is read on them once (`python -m opttree.train.card --set
public`, recorded as `tau_public`), beside the project's own eval and final sets, and the benchmark
pages read their long-passage and mixed subsets (benchmarks/public.sh).

The file does not ship: its texts come from those datasets under their own terms. Put Spec-Bench's
`data/spec_bench/question.jsonl` at `data/spec_bench/question.jsonl` (git-ignored; `URL` below is the
pinned commit's copy). It is checked against `SOURCE["sha256"]`, so every figure read on it refers to
the same 480 questions.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

from opttree import paths
from opttree.decoding.prompts import round_robin
from opttree.errors import BadInput, guarded
from opttree.train.prompt_parts import five_grams
from opttree.train.prompts import train_prompts

SOURCE = {"repo": "hemingkx/Spec-Bench", "commit": "fd2c1cd7d2201ef71db4c5f4e455008f017967bf",
          "path": "data/spec_bench/question.jsonl",
          "sha256": "4b6d33e79484f9841c487ee87d1cf6aa8c6066f61d5d482ff09e5a007fafdf04"}
URL = f"https://raw.githubusercontent.com/{SOURCE['repo']}/{SOURCE['commit']}/{SOURCE['path']}"
DEFAULT_PATH = paths.public_questions("spec_bench")

MT_BENCH = ("writing", "roleplay", "reasoning", "math", "coding", "extraction", "stem", "humanities")
TASKS = ("mt_bench", "translation", "summarization", "qa", "math_reasoning", "rag")
LONG_TASKS = ("summarization", "rag")      # a long passage handed over to summarise or answer from
SUBSETS = ("mt-bench", "long", "mixed")


def task_of(category: str) -> str:
    """Spec-Bench's task for a question's category: MT-bench's eight categories are one task."""
    return "mt_bench" if category in MT_BENCH else category


def read(path: str | Path | None = None) -> list[dict]:
    """The 480 questions, in file order; BadInput when the file is missing or is not the pinned one."""
    path = Path(path or DEFAULT_PATH)
    if not path.is_file():
        raise BadInput(f"no Spec-Bench question file at {path}: download {URL} there "
                       f"(Spec-Bench's {SOURCE['path']} at commit {SOURCE['commit'][:7]}).")
    data = path.read_bytes()
    if (digest := hashlib.sha256(data).hexdigest()) != SOURCE["sha256"]:
        raise BadInput(f"{path} is not the pinned Spec-Bench question file (sha256 {digest[:12]}…, expected "
                       f"{SOURCE['sha256'][:12]}…): figures read on another file would not compare. "
                       f"Download {URL}.")
    return [json.loads(line) for line in data.decode("utf-8").splitlines() if line.strip()]


def subset(questions: list[dict], name: str, per_task: int = 0) -> list[dict]:
    """First-turn questions in the card's format ({question_id, category, turns}):

    - `mt-bench`: MT-bench's questions in file order, their own categories kept (`per_task` 0: all 80;
      otherwise that many, one per category in turn);
    - `long`: the first `per_task` of each long-passage task, categorised by task;
    - `mixed`: `per_task` of each of the six tasks, categorised by task; within MT-bench one per
      category in turn (writing, roleplay, reasoning, …), elsewhere the first ones in file order.

    Which questions a subset holds depends only on the file and `per_task`, never on any result."""
    if name not in SUBSETS:
        raise BadInput(f"unknown Spec-Bench subset {name!r}; one of {', '.join(SUBSETS)}.")
    if per_task < 0:
        raise BadInput(f"per_task must be 0 (all) or more, got {per_task}.")
    by_task: dict[str, list[dict]] = {t: [] for t in TASKS}
    for q in questions:
        by_task.setdefault(task_of(q["category"]), []).append(q)

    def first(items: list[dict]) -> list[dict]:
        return items[:per_task] if per_task else items

    def card_form(q: dict, category: str) -> dict:
        return {"question_id": q["question_id"], "category": category, "turns": q["turns"][:1]}

    if name == "mt-bench":   # `per_task` of them, one per category in turn, kept in file order
        return [card_form(q, q["category"]) for q in round_robin(by_task["mt_bench"], lambda q: q["category"],
                                                                  per_task or None, file_order=True)]
    if name == "long":
        return [card_form(q, t) for t in LONG_TASKS for q in first(by_task[t])]
    out = []
    for task in TASKS:
        items = by_task[task]
        if task == "mt_bench":    # its categories come in MT_BENCH's order in the file
            items = round_robin(items, lambda q: q["category"])
        out += [card_form(q, task) for q in first(items)]
    return out


def overlap(questions: list[dict], texts, near: float = 0.5) -> dict[str, dict]:
    """How much of each question's text also occurs in `texts`, by task: a mechanical contamination
    check (it reports ids and counts; nobody reads the matches to choose anything). A run of five
    words shared somewhere is common ("what is the difference between"); a question most of whose
    runs of five words occur in training text (`near` or more of them) is a near-copy."""
    grams = set().union(*(five_grams(q["turns"][0]) for q in questions))
    seen: set = set()
    for text in texts:
        seen |= five_grams(text) & grams
    out: dict[str, dict] = {t: {"questions": 0, "sharing_a_run": 0, "near_copies": []} for t in TASKS}
    for q in questions:
        own = five_grams(q["turns"][0])
        row = out.setdefault(task_of(q["category"]), {"questions": 0, "sharing_a_run": 0, "near_copies": []})
        row["questions"] += 1
        shared = len(own & seen)
        row["sharing_a_run"] += shared > 0
        if own and shared / len(own) >= near:
            row["near_copies"].append(q["question_id"])
    return out


def training_texts():
    """Every training prompt, then every turn of every ShareGPT conversation the reader keeps: what
    the shipped drafts could have read."""
    from opttree.train.sharegpt import conversations  # reads the training-only ShareGPT package

    yield from (p.text for p in train_prompts())
    for conv in conversations():
        yield from (text for _, text in conv.turns)


def main(argv=None) -> list[dict]:
    """Write a subset as a JSONL prompt file that `opttree bench --prompts` reads:
    python -m opttree.train.spec_bench --subset long --per-task 8 --out data/spec_bench/long.jsonl"""
    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("--questions", default=str(DEFAULT_PATH), help="Spec-Bench's question.jsonl (pinned by sha256)")
    ap.add_argument("--subset", choices=SUBSETS)
    ap.add_argument("--per-task", type=int, default=0, help="questions per task (0: all)")
    ap.add_argument("--out")
    ap.add_argument("--overlap", action="store_true",
                    help="instead: count by task the questions sharing runs of five words with the training prompts "
                         "and ShareGPT's conversations, naming near-copies (needs requirements-train.txt)")
    args = ap.parse_args(argv)
    if not (args.overlap or (args.subset and args.out)):
        ap.error("--subset and --out are required (or --overlap)")
    try:
        questions = read(args.questions)
        picked = [] if args.overlap else subset(questions, args.subset, args.per_task)
    except BadInput as exc:
        raise SystemExit(f"error: {exc}") from None
    if args.overlap:
        found = overlap(questions, training_texts())
        print(json.dumps(found))
        return found
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(q, ensure_ascii=False) + "\n" for q in picked), encoding="utf-8")
    print(f"{len(picked)} questions -> {out}")
    return picked


if __name__ == "__main__":
    raise SystemExit(guarded(main))
