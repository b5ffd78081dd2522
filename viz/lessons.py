"""The Learn tab's one-click lessons and its prose (plain data and two small look-ups; the app wires it up).

Each lesson is chosen to show one distinct lesson, and carries the settings that make it visible
even with a small CPU model and a short run. What a lesson runs (its prompt, model pair and
settings) is declared here, in `RUNS`; what it says (its name and caption) is read from
`assets/lessons.json` under the same id, and the tab's prose from `assets/learn.md`, when the page
starts. Every preset carries the same keys: its name, lesson and prompt, the model pair (an
allow-list id; None = the allow-list's default pair) and the same settings.
"""

from __future__ import annotations

import json

from opttree import paths

SUMMARY_PROMPT = (
    "Summarize the following text in two sentences.\n\nThe Great Barrier Reef is the world's largest coral reef "
    "system, composed of over 2,900 individual reefs and 900 islands stretching for over 2,300 kilometres over an "
    "area of approximately 344,400 square kilometres. The reef is located in the Coral Sea, off the coast of "
    "Queensland, Australia. It can be seen from outer space and is the world's biggest single structure made by "
    "living organisms. This reef structure is composed of and built by billions of tiny organisms, known as coral "
    "polyps.")


def run_of(prompt: str, method: str, nodes: int, threshold: float, tokens: int, depth: int = 10, **extra) -> dict:
    """One lesson's run: its prompt, tree method, node budget (0 = auto), δ, new tokens, max depth and any
    other setting it names (a model pair, a length control, ...)."""
    return {"prompt": prompt, "method": method, "nodes": nodes, "max_depth": depth, "threshold": threshold,
            "max_new_tokens": tokens, **extra}


# The summarising lessons (prompt lookup, retrieval fusion): the same prompt and settings, their own pair.
SUMMARY_RUN = run_of(SUMMARY_PROMPT, "opt-tree", 20, 0.3, 32)
COUNT = "Count from 1 to 30, separated by commas."
POEM = "Write a short poem about autumn."
PHOTOSYNTHESIS = "Explain photosynthesis in two sentences."
PLANETS = "List the planets of the solar system in order"

# What each lesson runs, by its id in assets/lessons.json, in the order the page lists them.
RUNS = {
    "deep-chain": run_of(COUNT, "opt-tree", 30, 0.2, 32, depth=12),
    "wide-tree": run_of(POEM, "opt-tree", 60, 0.3, 24),
    "high-delta": run_of(PHOTOSYNTHESIS, "opt-tree", 60, 0.9, 24),
    "low-delta": run_of(PHOTOSYNTHESIS, "opt-tree", 60, 0.02, 24),
    "auto-budget": run_of(POEM, "opt-tree", 0, 0.3, 24),
    "static-binary": run_of(PHOTOSYNTHESIS, "binary", 60, 0.3, 24),
    "tree-temperature": run_of(POEM, "opt-tree", 60, 0.3, 24, tree_temperature=0.3),
    "token-recycling": run_of(PLANETS + " from the Sun, one per line.", "tr-static", 40, 0.3, 32,
                              model="smollm2-recycling", recycling_scope="session"),
    "prompt-lookup": {**SUMMARY_RUN, "model": "smollm2-lookup"},
    "retrieval-fusion": {**SUMMARY_RUN, "model": "smollm2-eagle", "retrieval": "on"},
    "thompson-sampling": run_of(COUNT, "opt-tree", 30, 0.2, 48, depth=12, length_control="thompson"),
    "learned-predictor": run_of(PHOTOSYNTHESIS, "opt-tree", 30, 0.3, 32, length_control="predictor"),
    "early-exit": run_of(PLANETS + ".", "chain", 10, 0.3, 48, depth=8, length_control="thompson",
                         model="smollm2-early-exit"),
    "sequoia": run_of(PHOTOSYNTHESIS, "sequoia", 25, 0.3, 24),
}

# What a preset does not name is set to these (ui/explore.apply_preset sets every key): greedy, the
# draft's fitted tree temperature, the Explore model pair, no retrieval, a fresh recycling table per run
# and OPT-Tree's δ rule for the depth.
PRESET_DEFAULTS = {"temperature": 0.0, "tree_temperature": 0.0, "model": None, "retrieval": "off",
                   "recycling_scope": "run", "length_control": "delta"}


def read_texts() -> tuple[str, dict[str, dict]]:
    """The Learn tab's prose (assets/learn.md) and each lesson's name and caption (assets/lessons.json)."""
    learn = (paths.PAGE_ASSETS / "learn.md").read_text(encoding="utf-8")
    texts = json.loads((paths.PAGE_ASSETS / "lessons.json").read_text(encoding="utf-8"))
    if list(texts) != list(RUNS) or any(set(t) != {"name", "lesson"} for t in texts.values()):
        raise ValueError("assets/lessons.json must give a name and a lesson for each of viz/lessons.py's RUNS, "
                         f"in their order: {list(RUNS)}")
    return learn, texts


LEARN_TEXT, TEXTS = read_texts()
PRESETS = [{**PRESET_DEFAULTS, **TEXTS[key], **run} for key, run in RUNS.items()]


def caption_markdown(index: int | None) -> str:
    """What a lesson shows, as the line above the tree while its run is on screen ("" for none)."""
    if index is None or not 0 <= index < len(PRESETS):
        return ""
    p = PRESETS[index]
    return f"**Lesson: {p['name']}.** {p['lesson']}"


def _same(a, b) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return float(a) == float(b)
    return a == b


def lesson_of(prompt: str, model: str | None, settings: dict, default_model: str | None = None) -> int | None:
    """The lesson a run is (its prompt, pair and every setting the lesson sets), or None."""
    for i, p in enumerate(PRESETS):
        if (prompt or "").strip() != p["prompt"].strip() or model != (p["model"] or default_model):
            continue
        if all(_same(settings.get(k), v) for k, v in p.items() if k not in ("name", "lesson", "prompt", "model")):
            return i
    return None


def learn_sections(text: str = LEARN_TEXT) -> list[tuple[str, str]]:
    """The Learn prose as (heading, body) pairs, one per `### ` heading: one folded section per topic."""
    sections = []
    for block in ("\n" + text).split("\n### ")[1:]:
        title, _, body = block.partition("\n")
        sections.append((title.strip(), body.strip()))
    return sections
