"""Benchmark prompt files: JSONL in MT-bench / Spec-Bench form or plain `{"prompt": ...}` lines.

MT-bench form: `{"question_id": 81, "category": "writing", "turns": ["first turn", ...]}`; only the
first turn is used (the benchmark measures single-turn decoding). Plain form: `{"prompt": "..."}` or
`{"question": "..."}`
with optional `id` / `question_id` and `category`. Anything else is rejected with the file name,
the line number and what is wrong, before any model is loaded.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from opttree.decoding.prompts import clean_prompt, round_robin
from opttree.errors import BadInput

MAX_FILE_BYTES = 32 * 1024 * 1024


@dataclass
class BenchPrompt:
    id: str
    category: str
    prompt: str

    def to_dict(self) -> dict:
        return asdict(self)


def _one(obj, where: str, index: int) -> BenchPrompt:
    if not isinstance(obj, dict):
        raise BadInput(f"{where}: each line must be a JSON object, got {type(obj).__name__}.")
    if "turns" in obj:
        turns = obj["turns"]
        if not isinstance(turns, list) or not turns or not isinstance(turns[0], str):
            raise BadInput(f"{where}: 'turns' must be a non-empty list of strings.")
        text = turns[0]
    elif "prompt" in obj or "question" in obj:
        key = "prompt" if "prompt" in obj else "question"
        text = obj[key]
        if not isinstance(text, str):
            raise BadInput(f"{where}: '{key}' must be a string.")
    else:
        raise BadInput(f"{where}: expected MT-bench form {{\"question_id\", \"category\", \"turns\": [...]}} "
                       "or {\"prompt\": ...} or {\"question\": ...}; found keys "
                       + ", ".join(sorted(map(str, obj))[:8]) + ".")
    try:
        text = clean_prompt(text)
    except BadInput as exc:
        raise BadInput(f"{where}: {exc}") from None
    qid = obj.get("question_id", obj.get("id", index + 1))
    category = obj.get("category", "all")
    if not isinstance(category, str) or not category.strip():
        category = "all"
    return BenchPrompt(str(qid), category.strip(), text)


def parse_prompts(text: str, name: str = "<prompts>") -> list[BenchPrompt]:
    out: list[BenchPrompt] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{name} line {lineno}"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise BadInput(f"{where}: not valid JSON ({exc.msg}); the file must be JSONL, one object a line.") \
                from None
        out.append(_one(obj, where, len(out)))
    if not out:
        raise BadInput(f"{name}: no prompts found (empty file).")
    return out


def read_prompts(path, limit: int | None = None, categories: list[str] | None = None) -> list[BenchPrompt]:
    """Prompts from a JSONL file; `limit` keeps the first N (after the optional category filter)."""
    p = Path(path)
    if not p.is_file():
        raise BadInput(f"prompt file {path} not found.")
    if p.stat().st_size > MAX_FILE_BYTES:
        raise BadInput(f"prompt file {path} is too large (limit 32 MB).")
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise BadInput(f"prompt file {path} is not UTF-8 text.") from None
    prompts = parse_prompts(text, str(path))
    if categories:
        prompts = [q for q in prompts if q.category in categories]
        if not prompts:
            raise BadInput(f"{path}: no prompts in categories {', '.join(categories)}.")
    if limit is not None:
        if limit < 1:
            raise BadInput(f"--limit must be at least 1, got {limit}.")
        prompts = spread(prompts, limit)
    return prompts


def spread(prompts: list[BenchPrompt], limit: int) -> list[BenchPrompt]:
    """`limit` prompts taken round-robin over categories (decoding/prompts.round_robin), back in file
    order."""
    return round_robin(prompts, lambda q: q.category, limit, file_order=True)


def with_given(texts: list[str], prompts: list[BenchPrompt]) -> list[BenchPrompt]:
    """Prompts given as text (ids "prompt", "prompt-2", …; category "given") before `prompts`; a text
    listed twice is measured once, where it first appears."""
    given = [BenchPrompt("prompt" if i == 0 else f"prompt-{i + 1}", "given", clean_prompt(t))
             for i, t in enumerate(texts)]
    seen: set[str] = set()
    out = []
    for q in given + list(prompts):
        if q.prompt not in seen:
            seen.add(q.prompt)
            out.append(q)
    return out
