"""How parts 5 and 6 of the training prompts (`opttree/assets/prompts/train.jsonl`) were written.

The frozen file is the truth; this module documents how those lines were made, reproduces them byte
for byte (tests/engine/test_drafts.py runs it) and refuses to append a part twice. The templates and word
lists are data, `opttree/assets/prompts/parts/part5.json` and `part6.json` (values exactly as the
lines were generated from: editing one breaks the reproduction); the recipe that combines them, with
every random draw in its order, is the code below.

Part 5 is about *form* rather than subject: text handed to the model to work on (summarise,
translate, rewrite, answer from a passage, continue), answers of set shapes and lengths (one
sentence, three bullets, a table, a long step-by-step guide), and code of kinds the earlier parts
have little of (SQL over a given schema, regular expressions, shell one-liners, tests, translation
between languages).

Part 6 varies form and subject again: data handed over in the prompt (small tables to total, rank,
compare and describe), conversations to continue or summarise, follow-ups that quote an earlier
answer and ask for a change, sentences to correct, brainstormed lists, plans under constraints,
sorting items into groups, everyday concepts explained at two levels or by analogy, word problems
with generated numbers, code around error messages, formats and given specifications, writing under
constraints and longer articles. A prompt sharing a run of five words with the eval or final set is
dropped mechanically, unread.

Both were written without reading the eval or final sets, per item or per category (docs/drafts.md,
"the rule").

    python -m opttree.train.prompt_parts --check    # re-run parts 5 and 6, compare with the frozen lines
    python -m opttree.train.prompt_parts 6          # append part 6 (once: refuses, it is there)
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from collections.abc import Callable
from functools import lru_cache

from opttree import paths
from opttree.errors import guarded

PARTS_DIR = paths.PROMPTS / "parts"
HELDOUT_SHARE = 0.04
PER_NUMBER_TEMPLATE = 7  # part 6: prompts drawn from each number-problem template


def templates(part: int) -> dict:
    """The templates and word lists a part was generated from."""
    return json.loads((PARTS_DIR / f"part{part}.json").read_text(encoding="utf-8"))


def distinct(texts: list[str]) -> list[str]:
    """The texts in order, each once (compared case- and space-insensitively at the ends)."""
    seen, unique = set(), []
    for text in texts:
        key = text.strip().lower()
        if key not in seen:
            seen.add(key)
            unique.append(text)
    return unique


def build_part5(rng: random.Random) -> list[str]:
    d = templates(5)
    out = []
    for p in d["passages"]:
        for t in rng.sample(d["summary_tasks"], 12):
            out.append(t.format(p=p))
    pairs = [(s, lang) for s in d["sentences"] for lang in d["languages"]]
    for s, lang in rng.sample(pairs, 260):
        out.append(rng.choice(d["translate"]).format(s=s, lang=lang))
    for foreign in d["foreign"]:
        for t in d["from_foreign"]:
            out.append(t.format(lang=foreign["lang"], s=foreign["text"]))
    combos = [(t, lang) for t in d["code_tasks"] for lang in d["code_langs"]]
    for task, lang in rng.sample(combos, 200):
        out.append(rng.choice(d["code_forms"]).format(task=task, lang=lang))
    for sql in d["sql"]:
        tables = "tables" if " and " in sql["schema"] else "table"
        for task in sql["tasks"]:
            out.append(d["sql_form"].format(tables=tables, schema=sql["schema"], task=task))
    for task in d["shell"]:
        out += [form.format(task=task) for form in d["shell_forms"]]
    for what in d["regex"]:
        out.append(d["regex_form"].format(what=what))
    for snippet in d["snippets"]:
        lang = snippet["lang"]
        for t in d["snippet_tasks"]:
            other = rng.choice([x for x in d["code_langs"] if x != lang])
            out.append(t.format(lang=lang, code=snippet["code"], other=other))
    for topic in d["long_topics"]:
        for form in rng.sample(d["long_forms"], 5):
            out.append(form.format(t=topic))
    combos = [(s, x) for s in d["shapes"] for x in d["shape_subjects"]]
    out += [s.format(x=x) for s, x in rng.sample(combos, 150)]
    out += d["short"]
    for w in d["write_from"]:
        for v in rng.sample(d["write_variants"], 3):
            out.append(v.format(w=w))
    unique = distinct(out)
    rng.shuffle(unique)
    return unique


def table_text(rng: random.Random, table: dict, row_names: list[str]) -> str:
    """A small markdown table with random values in the table's range, one row per name."""
    lo, hi = table["range"]
    row, cols = table["row"], table["columns"]
    head = f"| {row} | " + " | ".join(cols) + " |\n|" + "---|" * (len(cols) + 1) + "\n"
    body = "".join(f"| {r} | " + " | ".join(str(rng.randint(lo, hi)) for _ in cols) + " |\n" for r in row_names)
    return f"{table['title']}:\n\n{head}{body}"


def number_problem(rng: random.Random, template: str) -> str:
    # The draws happen in this keyword order (a, b, c, d, h, e, p, q, t, m, n), used or not.
    return template.format(a=rng.randint(2, 9), b=rng.choice([120, 150, 200, 250, 300, 450, 6, 7, 8]),
                           c=rng.randint(3, 14), d=rng.choice([60, 90, 120, 180, 240, 300, 420, 15, 21]),
                           h=rng.randint(2, 6), e=rng.choice([500, 750, 1200, 1500, 2400]),
                           p=rng.choice([40, 60, 85, 120, 150, 240, 300]), q=rng.choice([5, 10, 15, 20, 25, 30]),
                           t=rng.randint(6, 20), m=rng.randint(15, 59), n=rng.randint(3, 8))


def _part6_handed_over(rng: random.Random, d: dict) -> list[str]:
    """Part 6's prompts that hand the model material: tables, dialogues, earlier answers, sentences."""
    out = []
    for table in d["tables"]:
        for task in rng.sample(d["table_tasks"], 7):
            out.append(table_text(rng, table, d["row_names"][table["row"]]) + "\n" + task.format(row=table["row"]))
    for dialogue in d["dialogues"]:
        for task in rng.sample(d["dialogue_tasks"], 5):
            out.append(task.format(d=dialogue))
    for earlier in d["earlier"]:
        for f in rng.sample(d["follow_ups"], 5):
            out.append(d["earlier_form"].format(request=earlier["request"], answer=earlier["answer"], follow_up=f))
    for s in d["sentences_to_fix"]:
        for t in rng.sample(d["fix_tasks"], 2):
            out.append(t.format(s=s))
    return out


def _part6_asked_for(rng: random.Random, d: dict) -> list[str]:
    """Part 6's remaining prompts: lists, plans, sorting, concepts, articles, code, writing, numbers."""
    out = []
    for x in d["brainstorm"]:
        for form in rng.sample(d["brainstorm_forms"], 2):
            out.append(form.format(n=rng.choice([5, 7, 10, 12]), x=x))
    for p in d["plans"]:
        for form in rng.sample(d["plan_forms"], 3):
            out.append(form.format(p=p))
    for sort in d["sort_tasks"]:
        out += [form.format(task=sort["task"], items=sort["items"]) for form in d["sort_forms"]]
    for c in d["concepts"]:
        for form in rng.sample(d["concept_forms"], 3):
            out.append(form.format(c=c))
    for t in d["article_topics"]:
        for form in rng.sample(d["article_forms"], 2):
            out.append(form.format(t=t))
    for error in d["errors"]:
        out += [form.format(lang=error["lang"], e=error["error"]) for form in d["error_forms"]]
    combos = [(s, lang) for s in d["specs"] for lang in d["spec_langs"]]
    for s, lang in rng.sample(combos, 120):
        out.append(rng.choice(d["spec_forms"]).format(s=s, lang=lang))
    for conv in d["conversions"]:
        out += [form.format(src=conv["from"], dst=conv["to"], data=conv["data"]) for form in d["conversion_forms"]]
    objects = d["objects"]
    for template in d["constrained"]:
        for o in rng.sample(objects, 6):
            w = rng.choice(d["word_sets"])
            out.append(template.format(w=w, o=o, o2=rng.choice([x for x in objects if x != o])))
    for template in d["number_problems"]:
        for _ in range(PER_NUMBER_TEMPLATE):
            out.append(number_problem(rng, template))
    return out


def build_part6(rng: random.Random) -> list[str]:
    d = templates(6)
    out = _part6_handed_over(rng, d)
    out += _part6_asked_for(rng, d)
    unique = [t for t in distinct(out) if not shares_five_words(t)]
    rng.shuffle(unique)
    return unique


def five_grams(text: str) -> set[tuple[str, ...]]:
    """The runs of five words in a text (lower case, letters, digits and apostrophes)."""
    words = re.findall(r"[a-z0-9']+", text.lower())
    return {tuple(words[i:i + 5]) for i in range(len(words) - 4)}


@lru_cache(maxsize=1)
def _measured_five_grams() -> frozenset:
    grams = set()
    for path in (paths.EVAL_PROMPTS, paths.FINAL_PROMPTS):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                for turn in json.loads(line)["turns"]:
                    grams |= five_grams(turn)
    return frozenset(grams)


def shares_five_words(text: str) -> bool:
    """Whether the prompt shares a run of five words with the eval or final set (checked, never read)."""
    return bool(five_grams(text) & _measured_five_grams())


# part -> (seed, builder); a builder draws every random number from the rng it is given, in order.
PARTS: dict[int, tuple[int, Callable[[random.Random], list[str]]]] = {5: (5, build_part5), 6: (6, build_part6)}


def part_rows(part: int, rows: list[dict]) -> list[dict]:
    """The lines a part adds after `rows`: texts already there are dropped, a seeded HELDOUT_SHARE of
    the rest is held out, ids continue the file's numbering."""
    seed, build = PARTS[part]
    have = {r["text"].strip().lower() for r in rows}
    rng = random.Random(seed)
    texts = [t for t in build(rng) if t.strip().lower() not in have]
    held = set(rng.sample(range(len(texts)), round(HELDOUT_SHARE * len(texts))))
    return [{"id": f"tr{len(rows) + i:05d}", "part": part, "heldout": i in held, "text": text}
            for i, text in enumerate(texts)]


def frozen_rows() -> list[dict]:
    """The training prompt file's lines as they are now."""
    text = paths.TRAIN_PROMPTS.read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def append_part(part: int) -> None:
    """Append a part to the frozen training prompts, once."""
    rows = frozen_rows()
    if any(r["part"] == part for r in rows):
        sys.exit(f"part {part} is already in {paths.TRAIN_PROMPTS}: the file is frozen data, written once.")
    new = part_rows(part, rows)
    with paths.TRAIN_PROMPTS.open("a", encoding="utf-8") as f:
        for row in new:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"appended {len(new)} prompts ({sum(r['heldout'] for r in new)} held out) as part {part}")


def check() -> bool:
    """Re-run every part against the lines before it; whether each matches its frozen lines exactly."""
    rows, ok = frozen_rows(), True
    for part in PARTS:
        frozen = [r for r in rows if r["part"] == part]
        same = part_rows(part, [r for r in rows if r["part"] < part]) == frozen
        print(f"part {part}: {len(frozen)} frozen lines, {'reproduced exactly' if same else 'NOT reproduced'}")
        ok &= same
    return ok


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m opttree.train.prompt_parts", description=__doc__.split("\n")[0])
    ap.add_argument("part", nargs="?", type=int, choices=sorted(PARTS), help="append this part (once)")
    ap.add_argument("--check", action="store_true", help="re-run the parts and compare with the frozen lines")
    args = ap.parse_args(argv)
    if args.check:
        sys.exit(0 if check() else 1)
    if args.part is None:
        ap.error("name a part to append, or --check")
    append_part(args.part)


if __name__ == "__main__":
    raise SystemExit(guarded(main))
