"""`opttree eval`: answer a question file with the reference repo's evaluation flags.

Flags follow Jikai0Wang/OPT-Tree's evaluation scripts (`--base-model-path --draft-model-path
--ea-model-path --bench-name --answer-file --temperature --nodes --threshold --max_depth`, plus
`--model-id --question-begin --question-end --max-new-token`). Questions are MT-bench / Spec-Bench
JSONL (`{"question_id", "category", "turns"}`) or `{"question"}` / `{"prompt"}` lines; every turn is
answered in one conversation (chat template), like the reference. One answer line per question,
FastChat style, readable unchanged by Spec-Bench's `evaluation/speed.py`:
`{"question_id", "answer_id", "model_id", "category", "choices": [{...}], "tstamp", "config"}` with
`choices[0]` holding, per turn, `turns` (the answer texts), `idxs` (target forwards), `new_tokens` and
`wall_time` (seconds), and `accept_lengths`: ONE flat list over all turns of the tokens committed at
each step (accepted draft tokens + the bonus token, so AR gives 1s; its mean is τ, what Spec-Bench
prints as "#Mean accepted tokens"). Richer fields sit beside them under their own names: `tau` per
turn and `accepted_draft_tokens` (per turn, per step: draft tokens accepted, without the bonus); `config`
holds the settings and `question_file` (the file's path and sha256).

Drafter: `--ea-model-path` selects the EAGLE-style head, `--draft-model-path` a classic draft LM;
neither = the bundled EAGLE head (`--drafter` overrides).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
import uuid
from pathlib import Path

from opttree import paths
from opttree.args import add_decode_args, add_model_args, context_from_args, decode_config, load_from_args
from opttree.bench.env import progress_bar
from opttree.bench.prompts import read_prompts
from opttree.config import models_from_args
from opttree.decoding.prompts import clean_prompt, encode_prompt
from opttree.engine.speculative import run, warm_up
from opttree.errors import BadInput, OneLineParser, guarded


def question_file(bench_name: str, explicit: str | None) -> Path:
    if explicit:
        return Path(explicit)
    candidates = [paths.PROMPTS / f"{bench_name}.jsonl", Path("data") / bench_name / "question.jsonl",
                  paths.public_questions(bench_name)]
    for c in candidates:
        if c.is_file():
            return c
    raise BadInput(f"no question file for --bench-name {bench_name!r}: looked for "
                   + ", ".join(str(c) for c in candidates) + " (or pass --question-file).")


def read_questions(path: Path) -> list[dict]:
    """Questions with all their turns (the benchmark reader validates the file and the first turn)."""

    first = read_prompts(path)  # raises BadInput with the line number on a bad file
    out = []
    lines = [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]
    for i, (q, line) in enumerate(zip(first, lines)):
        obj = json.loads(line)
        turns = obj.get("turns") if isinstance(obj.get("turns"), list) else [q.prompt]
        turns = [t for t in turns if isinstance(t, str) and t.strip()] or [q.prompt]
        qid = obj.get("question_id", obj.get("id", i + 1))
        out.append({"question_id": qid, "category": q.category, "turns": turns})
    return out


def conversation_ids(tokenizer, turns: list[str], answers: list[str]) -> list[int]:
    """Token ids for the conversation so far (user turns with the answers given), ready to answer."""

    if len(turns) == 1 or not getattr(tokenizer, "chat_template", None):
        if len(turns) == 1:
            return encode_prompt(tokenizer, turns[0])
        text = "".join(f"{t} {a} " for t, a in zip(turns, answers)) + turns[-1]
        return encode_prompt(tokenizer, text, chat=False)
    msgs = []
    for t, a in zip(turns, answers):
        msgs += [{"role": "user", "content": clean_prompt(t)}, {"role": "assistant", "content": a}]
    msgs.append({"role": "user", "content": clean_prompt(turns[-1])})
    enc = tokenizer.apply_chat_template(msgs, add_generation_prompt=True, return_dict=True)
    return [int(i) for i in enc["input_ids"]]


def file_source(path: Path) -> dict:
    """Which question file the answers are to: its path and sha256 (Spec-Bench's own file is pinned in
    train/spec_bench.SOURCE), so answers to another version of a set are told apart."""
    return {"path": str(path), "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}


def run_eval(pair, questions: list[dict], cfg, answer_file, model_id: str, max_turns: int | None = None,
             context=None, source: dict | None = None) -> int:
    """Answer every question, appending one JSON line per question as it finishes; `source`
    (file_source) goes into each line's config as `question_file`."""
    path = Path(answer_file)
    path.parent.mkdir(parents=True, exist_ok=True)
    written = 0
    with path.open("w", encoding="utf-8") as f:
        progress = progress_bar(questions, "questions")
        for q in progress:
            turns = q["turns"][:max_turns] if max_turns else q["turns"]
            answers, idxs, new_tokens, walls, taus, committed, accepted = [], [], [], [], [], [], []
            for j in range(len(turns)):
                ids = conversation_ids(pair.tokenizer, turns[: j + 1], answers)
                t0 = time.perf_counter()
                trace = run(pair, turns[j], cfg, prompt_ids=ids, record_target=False,   # timed: no theory data
                            context=context)
                walls.append(round(time.perf_counter() - t0, 4))
                s = trace["summary"]
                answers.append(trace["output_text"].strip())
                idxs.append(s["steps"])
                new_tokens.append(s["new_tokens"])
                taus.append(s["tau"])
                committed.extend(len(st["committed"]) for st in trace["steps"])
                accepted.append([st["accept_length"] for st in trace["steps"]])
            record = {"question_id": q["question_id"], "answer_id": uuid.uuid4().hex[:22], "model_id": model_id,
                      "category": q["category"],
                      "choices": [{"index": 0, "turns": answers, "idxs": idxs, "new_tokens": new_tokens,
                                   "wall_time": walls, "accept_lengths": committed, "tau": taus,
                                   "accepted_draft_tokens": accepted}],
                      "tstamp": time.time(),
                      "config": {**cfg.to_dict(), **({"question_file": source} if source else {})}}
            f.write(json.dumps(record, ensure_ascii=False) + "\n")
            f.flush()
            written += 1
            progress.set_postfix_str(f"id {q['question_id']}: τ={', '.join(f'{x:.2f}' for x in taus)}")
    return written


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="opttree eval", description=__doc__.split("\n")[0])
    add_model_args(p)
    p.add_argument("--model-id", default=None)
    p.add_argument("--bench-name", default="eval",
                   help="question set: assets/prompts/NAME.jsonl or data/NAME/question.jsonl")
    p.add_argument("--question-file", default=None)
    p.add_argument("--question-begin", type=int, default=None)
    p.add_argument("--question-end", type=int, default=None)
    p.add_argument("--answer-file", default=None, help="default: NAME/model_answer/MODEL_ID.jsonl")
    p.add_argument("--max-turns", type=int, default=None, help="answer at most this many turns per question")
    p.add_argument("--threads", type=int, default=None,
                   help="torch CPU threads (1 is much faster on a shared, busy CPU; see benchmarks/NOTES.md)")
    add_decode_args(p)
    p.add_argument("--max-new-token", dest="max_new_tokens", type=int, help="alias of --max-new-tokens")
    return p


def main(argv=None) -> int:
    """Answer the questions; bad input raises (the entry points, `opttree eval` and `python -m`, run this
    through errors.guarded: one `error:` line, status 2)."""
    args = build_parser().parse_args(argv)
    if args.threads:
        import torch  # torch stays out of `--help`

        torch.set_num_threads(args.threads)
    if args.max_new_tokens is None:
        args.max_new_tokens = 128
    cfg = decode_config(args, args.method)
    qpath = question_file(args.bench_name, args.question_file)
    questions = read_questions(qpath)[args.question_begin:args.question_end]
    if not questions:
        raise BadInput("no questions selected (check --question-begin/--question-end).")
    drafter = models_from_args(args).kind()
    model_id = args.model_id or f"{Path(args.target).name}-{args.method}-{drafter}-n{cfg.nodes or 'auto'}"
    answer_file = args.answer_file or f"{args.bench_name}/model_answer/{model_id}.jsonl"
    pair = load_from_args(args, need_draft=args.method != "ar")
    warm_up(pair)     # each answer's wall_time is a warm run's
    n = run_eval(pair, questions, cfg, answer_file, model_id, args.max_turns, context_from_args(args, pair),
                 file_source(qpath))
    print(f"wrote {n} answers to {answer_file}")
    return 0


if __name__ == "__main__":
    raise SystemExit(guarded(main))
