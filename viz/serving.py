"""The Serving tab's views: the shown run's tree as each serving engine takes it (vLLM's
`--speculative-config`, SGLang's flags: trees/export.py `engine_export`), and what a batch of sequences
does to the case for a tree (the modelled speedup over AR by tree size and batch size,
opttree/engine/batch_cost.py). Pure functions of a trace or of the model's table: no model.

Which static tree a run exports (`export_paths`):
- "run": the shape the run's own trees shared most, at n nodes: every verified tree's rank paths
  counted over the run's steps and the n most frequent kept a rank tree (trees/export.py
  `frequent_paths`, what `opttree export-tree --method opt-tree` fits over many prompts). A static
  method's run gives back its own shape; an OPT-Tree run its static stand-in.
- "sequoia": Sequoia's tree for the acceptance vector the trace records (`meta.acceptance_by_rank`,
  the draft card's measured one), else the default prior, said in the note.
- "binary", "eagle-static", "chain": those shapes at n nodes.
"""

from __future__ import annotations

import html
import json
import re
import shlex
import statistics
from collections import Counter
from pathlib import PurePath

import plotly.graph_objects as go

from opttree.config import (
    BUNDLED_DRAFTS,
    BUNDLED_ID,
    DRAFT_FLAGS,
    MODEL_DRAFTERS,
    RANDOM_HEAD,
    SELF_DRAFT,
    TRAINING_FREE,
)
from opttree.engine.batch_verdict import where_it_pays
from opttree.errors import BadInput
from opttree.models.bundled import engine_id, is_bundled
from opttree.paths import written_as_hub_id
from opttree.trees.export import (
    EXPORT_FORMATS,
    EXPORT_METHODS,
    engine_export,
    frequent_paths,
    held_note,
    rank_paths,
    static_paths,
)
from opttree.trees.sequoia import DEFAULT_ACCEPTANCE, expected_accepted

from . import style
from .drafters import drafter_kind

EXPORT_CHOICES = (("this run's trees (their most frequent shape)", "run"),
                  ("Sequoia (the draft's acceptance by rank)", "sequoia"),
                  ("binary", "binary"), ("EAGLE-25", "eagle-static"), ("chain", "chain"))
MAX_EXPORT_NODES = 128      # the export panel's size slider (the CLI takes any n)
EXPORT_DEPTH = 10           # the deepest exported tree (the paper's and the CLI's default)


def run_vector(trace: dict | None) -> tuple[tuple[float, ...], str]:
    """The acceptance vector a trace records (its draft card's) and where it came from; the default
    prior when the trace has none or an unusable one (traces are imported untrusted)."""
    meta = (trace or {}).get("meta") or {}
    vector = meta.get("acceptance_by_rank")
    ok = (isinstance(vector, list) and 0 < len(vector) <= 64
          and all(isinstance(a, (int, float)) and not isinstance(a, bool) and 0 <= a <= 1 for a in vector)
          and sum(vector) <= 1 + 1e-6)
    if not ok:
        why = "no run yet" if not trace else "the run records none measured"
        return DEFAULT_ACCEPTANCE, f"a default prior: {why}"
    return tuple(float(a) for a in vector), str(meta.get("acceptance_source") or "trace")


def default_nodes(trace: dict | None) -> int:
    """The size a run's export starts at: its fixed budget, or under the auto budget the median size
    of its trees (at least 1)."""
    meta = (trace or {}).get("meta") or {}
    nodes = meta.get("nodes")
    if isinstance(nodes, int) and not isinstance(nodes, bool) and nodes > 0:
        return min(nodes, MAX_EXPORT_NODES)
    sizes = [len(s.get("tokens") or []) for s in (trace or {}).get("steps") or []]
    sizes = [n for n in sizes if n > 0]
    return max(1, min(MAX_EXPORT_NODES, round(statistics.median(sizes)))) if sizes else 25


def run_counts(trace: dict) -> Counter:
    """How often each rank path stood in one of the run's trees (steps with no tree add nothing)."""
    counts: Counter = Counter()
    for step in trace.get("steps") or []:
        if step.get("parents") and step.get("rank") and len(step["parents"]) == len(step["rank"]):
            counts.update(set(rank_paths(step)))
    return counts


def export_paths(trace: dict | None, choice: str, nodes: int) -> tuple[list[tuple[int, ...]], list[str]]:
    """The rank paths the panel exports for `choice` (module docstring) and notes on where they came from."""
    nodes = max(1, min(int(nodes), MAX_EXPORT_NODES))
    if choice == "run":
        counts = run_counts(trace or {})
        if not counts:
            return [], ["The shown run drafted no tree (AR, or no run yet): pick a shape, or run a tree method."]
        paths = frequent_paths(counts, nodes)
        steps = sum(1 for s in (trace or {}).get("steps") or [] if s.get("parents"))
        note = (f"The {len(paths)} rank paths that stood most often in this run's {steps} trees"
                + (f" (its trees held only {len(paths)} distinct paths)" if len(paths) < nodes else "") + ".")
        return paths, [note]
    if choice == "sequoia":
        vector, source = run_vector(trace)
        paths = static_paths("sequoia", nodes, EXPORT_DEPTH, vector)
        shown = ", ".join(f"{a:.2f}" for a in vector[:6])
        return paths, [f"Sequoia's tree for the acceptance by rank {shown}… ({source}): it expects "
                       f"{expected_accepted(vector, nodes, EXPORT_DEPTH):.2f} accepted draft tokens a step."]
    paths = static_paths(choice, nodes, EXPORT_DEPTH)
    held = held_note(choice, nodes, paths, EXPORT_DEPTH)
    name = dict((v, k) for k, v in EXPORT_CHOICES).get(choice, choice)
    return paths, [held[0].upper() + held[1:] if held else f"The {name} shape."]


def _code(text: str, lang: str = "") -> str:
    """`text` as a fenced code block whose fence is longer than any run of backticks in it (a run's names are
    free text: none can close the block)."""
    fence = "`" * max(3, 1 + max((len(run) for run in re.findall(r"`+", text)), default=0))
    return f"{fence}{lang}\n{text}\n{fence}"


def _engine(paths, fmt: str, drafter: str, draft: str | None = None,
            target: str | None = None) -> tuple[str | None, list[str]]:
    """One engine's text and notes (trees/export.py `engine_export`, what the CLI prints; `draft` and `target`
    where the engine loads them), or no text and the reason the engine cannot take this tree or drafter."""
    try:
        out = engine_export(paths, fmt, drafter, draft, target)
    except BadInput as exc:
        return None, [str(exc)]
    return out.text, out.notes


# What stands in an engine block for a draft location this panel cannot give (vLLM's "model", SGLang's
# --speculative-draft-model-path), and what belongs there, by the drafter kinds whose engine method loads a draft.
DRAFT_SLOTS = {"eagle": "<an EAGLE head trained for your target>", "classic": "<a draft model for your target>"}
WANTED = {"eagle": "the hub id or folder of an EAGLE head trained for your target (an official EAGLE checkpoint)",
          "classic": "the hub id or folder of a smaller model with your target's vocabulary (a Hugging Face model)"}


def engine_draft(meta: dict | None, drafter: str) -> tuple[str | None, str]:
    """Where the engines load the run's draft, as the engine blocks show it, and the sentence saying what it is
    or what to put in its place and why; (None, "") for a drafter that loads none. A location is a hub id: the
    run's own (a command-line run records it) or the bundled target's release where the target drafts for itself
    (bundled.engine_id). Other drafts get DRAFT_SLOTS' slot: the page shows no path of the server's, and this
    project's drafts are in a format neither engine reads."""
    if drafter not in DRAFT_SLOTS:
        return None, ""
    meta = meta or {}
    target, draft = str(meta.get("target") or ""), str(meta.get("draft") or "")
    slot, name = DRAFT_SLOTS[drafter], PurePath(draft).name
    if draft == SELF_DRAFT or is_bundled(draft):      # a target as its own draft (the app's, or the bundled one)
        model = target if draft == SELF_DRAFT else draft
        own = engine_id(model) or (model if _hub_id(model) else None)
        said = "The target drafts for itself, so the engines load it again" if draft == SELF_DRAFT else \
            "The draft is the bundled target, which the engines load"
        if own:
            return own, f"{said} as the draft: {own}" + (", the bundled GGUF's full-precision release on the hub."
                                                        if own != model else ".")
        return "<your target's folder or hub id>", (f"{said} as the draft: the folder or hub id you serve the target "
                                                    "from, which this page does not show.")
    if _hub_id(draft):
        return draft, (f"The draft is the run's, {draft}, as its command named it: a hub id, or a folder of the "
                       "machine that ran it.")
    wanted = f"put in its place {WANTED[drafter]}"
    if draft == RANDOM_HEAD:
        return slot, (f"This run drafts with an untrained head (random weights, a useless draft for contrast), "
                      f"which nothing serves: {wanted}.")
    if name in BUNDLED_DRAFTS.values():     # by its name: the view reads the trace, not this machine's files
        return slot, (f"This run's draft is the bundled {name} (opttree/assets/drafts/{name}), in this "
                      f"project's own format, which neither vLLM nor SGLang loads: {wanted}.")
    return slot, (f"This run's draft, {name or 'unnamed'}, is a file or folder of the machine that ran it, whose "
                  f"path this page does not show: if it is a model folder an engine loads, put its path there; "
                  f"this project's own .safetensors drafts no engine reads, so for one of those {wanted}.")


def engine_target(meta: dict | None) -> tuple[str | None, str]:
    """Where the engines load the run's target, as the engine lines show it, and the sentence saying what that
    is: the bundled target's hub release (bundled.engine_id), or a name written as a hub id as the run recorded
    it (a command line's relative folder reads the same, as a draft's does in `engine_draft`); (None, "") for a
    server's model, whose path this page does not show (the lines keep `<target>`)."""
    target = str((meta or {}).get("target") or "")
    release = engine_id(target)
    if release:
        return release, (f"The engines serve {release}, the full-precision release on the hub that the bundled "
                         "GGUF was quantised from.")
    if _hub_id(target):
        return target, (f"The engines serve the run's target, {target}, as its command named it: a hub id, or a "
                        "folder of the machine that ran it.")
    return None, ""


def _hub_id(name: str) -> bool:
    """Whether a recorded name is an `org/name` hub id: a public name of a server's file or folder is its base
    name, never one (serve/allow_list.py `public_name`)."""
    return "/" in name and written_as_hub_id(name)


def export_drafter(trace: dict | None) -> str:
    """The drafter an export is for: the run's, or the CLI's default (eagle) with no run or after AR."""
    kind = drafter_kind((trace or {}).get("meta"))
    return kind if kind in (*MODEL_DRAFTERS, *TRAINING_FREE) else "eagle"


def cli_models(meta: dict, drafter: str) -> str:
    """The export-tree flags naming what a run drafted with, where the CLI's defaults (the bundled target, its
    bundled draft) are not it: another target and its draft; an untrained head (`random`, which the head
    loaders take); a target drafting for itself (`self`: the target named as its own classic draft)."""
    target, draft = str(meta.get("target") or ""), str(meta.get("draft") or "")
    line = cli_target(meta)
    own_target = bool(line)
    if draft == SELF_DRAFT:
        return line + f" {DRAFT_FLAGS['classic']} {shlex.quote(target if own_target else BUNDLED_ID)}"
    if draft and drafter in DRAFT_FLAGS and (own_target or draft == RANDOM_HEAD):
        line += f" {DRAFT_FLAGS[drafter]} {shlex.quote(draft)}"
    return line


def cli_target(meta: dict) -> str:
    """The --target flag naming a run's target where it is not the CLI's default (the bundled target)."""
    target = str(meta.get("target") or "")
    return f" --target {shlex.quote(target)}" if target and not is_bundled(target) else ""


def _unnamed_target(meta: dict) -> str:
    """A sentence on the line's --target where the engine blocks keep `<target>` (`engine_target` names no
    location): the line names the target as the run recorded it, which the command line reads as a folder of
    this machine or a hub id."""
    target = str(meta.get("target") or "")
    if not cli_target(meta) or engine_target(meta)[0]:
        return ""
    return (f" The line's --target names the run's target as the run recorded it, {style.md_text(target)}: a "
            "server's model by the name this page shows, a command-line run's as it was given; put the folder or hub "
            "id you serve it from in its place.")


def cli_text(trace: dict | None, choice: str, paths: list, formats: list[str]) -> list[str]:
    """The `opttree export-tree` line for the exported tree (`formats`: those that took it), or why there
    is none: "run" exports the run's own method (its max depth where it is not the CLI's default); "run" and
    "sequoia" name the run's target and draft where they are not the CLI's defaults (`cli_models`), the others
    the target alone (`cli_target`: the engines' lines name it); a method or drafter the CLI refuses gets no
    line."""
    meta = (trace or {}).get("meta") or {}
    method = str(meta.get("method") or "") if choice == "run" else choice
    if method not in EXPORT_METHODS:
        return [f"`opttree export-tree` has no --method {style.md_text(method)} (it takes "
                f"{', '.join(EXPORT_METHODS)}): Download saves this shape's rank paths."]
    drafter = export_drafter(trace)
    if not formats:
        return [f"No engine takes the {drafter} drafter, and `opttree export-tree` refuses it too."]
    line = f"opttree export-tree --format {formats[0]} --method {method} --nodes {len(paths)} --drafter {drafter}"
    depth = meta.get("max_depth")
    if choice == "run" and isinstance(depth, int) and not isinstance(depth, bool) and depth != EXPORT_DEPTH:
        line += f" --max-depth {depth}"
    if choice in ("run", "sequoia"):   # the run's draft gives the shape (its card, or none, gives the vector)
        line += cli_models(meta, drafter)
    else:   # the method alone gives the shape; the engines' lines still name the run's target
        line += cli_target(meta)
    others = " or ".join(f for f in EXPORT_FORMATS if f != formats[0])
    head = "The same from the command line"
    # The command line reads the named draft's card: the target drafting for itself and an untrained head have
    # none, so it draws this panel's default-prior tree too.
    reads_card = str(meta.get("draft") or "") not in (SELF_DRAFT, RANDOM_HEAD)
    if (choice == "sequoia" and drafter in MODEL_DRAFTERS and reads_card
            and run_vector(trace)[1].startswith("a default prior")):
        head = ("From the command line, which reads the draft's card for Sequoia's vector where it has one (this "
                "panel has no vector recorded by a run, so the command line's tree can differ)")
    return [f"{head} (for OPT-Tree it fits the shape over many prompts and measures what adaptivity is worth; "
            f"--format {others} for the others).{_unnamed_target(meta)} docs/serving.md says how to start each "
            "engine with it:", "", _code(line, "bash")]


def export_markdown(trace: dict | None, choice: str, nodes: int) -> str:
    """The panel: the tree's size and depth, then for each format (current vLLM's chain, vLLM ≤ 0.20's
    tree, SGLang's flags) what it takes or why it cannot, with what it loses, and the CLI line."""
    paths, notes = export_paths(trace, choice, nodes)
    notes = [style.md_text(n) for n in notes]     # plain text (an imported run's acceptance source among it)
    if not paths:
        return "\n\n".join(notes)
    drafter = export_drafter(trace)
    draft, where = engine_draft((trace or {}).get("meta"), drafter)
    target, served = engine_target((trace or {}).get("meta"))
    lines = [f"**{len(paths)} node{'' if len(paths) == 1 else 's'}, depth {max(len(p) for p in paths)}.** "
             + " ".join(notes)]
    for head, said in (("The draft in the engine blocks below.", where), ("The target in them.", served)):
        if said:
            lines += ["", f"**{head}** {style.md_text(said)}"]
    took = []
    for fmt, title in EXPORT_FORMATS.items():
        text, said = _engine(paths, fmt, drafter, draft, target)
        lines += ["", f"**{title}**" + (":" if text else ": cannot take it."), ""]
        if text:
            took.append(fmt)
            lines += [_code(text, "bash" if fmt == "sglang" else "json"), ""]
        lines.append(" ".join(html.escape(n, quote=False) for n in said))
    return "\n".join([*lines, "", *cli_text(trace, choice, paths, took)])


def export_json(trace: dict | None, choice: str, nodes: int) -> str:
    """The exported tree as data: rank paths and each format's text (None where the engine cannot take it)
    with its notes (what Download saves)."""
    paths, notes = export_paths(trace, choice, nodes)
    drafter = export_drafter(trace)
    draft, where = engine_draft((trace or {}).get("meta"), drafter)
    target = engine_target((trace or {}).get("meta"))[0]
    engines = {fmt: dict(zip(("text", "notes"), _engine(paths, fmt, drafter, draft, target))) if paths else None
               for fmt in EXPORT_FORMATS}
    return json.dumps({"choice": choice, "nodes": len(paths), "paths": [list(p) for p in paths], "notes": notes,
                       "drafter": drafter, "draft": where or None, "target": target, **engines}, indent=1,
                      ensure_ascii=False)


# ---- batching: the modelled speedup by tree size and batch size -------------------------------------

MODEL_NOTE = ("**A model built from measurements, not a measured batched run**: this machine's verify cost "
              "(one forward of B sequences × T tokens, measured) and the draft's acceptance by rank "
              "(measured on held-out training prompts) combined as tokens/s = B·(E(n)+1) / (verify(B, n+1) + "
              "B·draft(n)); `opttree serving` checks each axis against real runs (docs/serving.md).")


def speedup_figure(table: list[dict], best: dict, where: str = "") -> go.Figure:
    """Modelled speedup over AR at the same batch size against the Sequoia tree size, one line per batch
    size B, each line's best size starred; the dotted line is AR (×1)."""
    layout = dict(template=style.TEMPLATE, height=380, margin=dict(l=55, r=10, t=60, b=45),
                  title=dict(text="What batching does to a tree (modelled)" + (f"<br><sup>{where}</sup>" if where
                                                                                  else ""), x=0.01,
                             font=dict(size=14)),
                  legend=dict(orientation="h", y=-0.2, x=0))
    if not table:
        layout["annotations"] = [dict(text="Press Measure to build the model for this machine", showarrow=False,
                                      xref="paper", yref="paper", x=0.5, y=0.5)]
        layout.update(xaxis=dict(visible=False), yaxis=dict(visible=False))
        return go.Figure(dict(data=[], layout=layout), _validate=False)
    data = []
    for b in sorted({r["batch"] for r in table}):
        rows = sorted((r for r in table if r["batch"] == b), key=lambda r: r["nodes"])
        data.append(dict(type="scatter", mode="lines+markers", name=f"B = {b}", x=[r["nodes"] for r in rows],
                         y=[r["speedup"] for r in rows], customdata=[r["tokens_per_s"] for r in rows],
                         hovertemplate=(f"B = {b}, n = %{{x}}: ×%{{y:.2f}} over AR, %{{customdata:.0f}} tokens/s "
                                        "(modelled)<extra></extra>")))
    stars = [best[b] for b in sorted(best)]
    # Batches whose best size is the same (often 0: AR) share a point: their stars nest.
    sizes = style.nested_star_sizes(len(stars), smallest=14)
    data.append(dict(type="scatter", mode="markers", name="best n for that B", x=[r["nodes"] for r in stars],
                     y=[r["speedup"] for r in stars], marker=dict(symbol="star", size=sizes, color=style.BONUS,
                                                                  line=dict(color=style.GUIDE, width=1)),
                     hovertemplate="best at B = %{text}: n = %{x}, ×%{y:.2f}<extra></extra>",
                     text=[str(r["batch"]) for r in stars]))
    layout.update(xaxis=dict(title=dict(text="Sequoia tree size n (draft nodes verified per sequence; 0 = AR)")),
                  yaxis=dict(title=dict(text="speedup over AR at the same B (modelled)"), rangemode="tozero"),
                  shapes=[dict(type="line", xref="paper", x0=0, x1=1, y0=1, y1=1,
                               line=dict(color=style.GUIDE, dash="dot", width=1))])
    return go.Figure(dict(data=data, layout=layout), _validate=False)


def batch_summary(best: dict) -> str:
    """One sentence from the model: up to which batch size a tree pays (`batch_verdict.where_it_pays`), and the
    best size at each B."""
    if not best:
        return ""
    rows = [best[b] for b in sorted(best)]
    per_b = "; ".join(f"B = {r['batch']}: " + (f"n = {r['nodes']} (×{r['speedup']:.2f})" if r["nodes"] > 0
                                                else "AR") for r in rows)
    return f"{where_it_pays(best)} Best size per batch: {per_b}."
