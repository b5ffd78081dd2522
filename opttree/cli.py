"""`opttree` / `python -m opttree`: `generate`, the benchmark commands (`bench`, `sweep`, `eval`) and the
serving commands (`export-tree`, `serving`: docs/serving.md)."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import tempfile
from pathlib import Path

import torch

from opttree.args import add_decode_args, add_model_args, context_from_args, decode_config, load_from_args
from opttree.bench import serving_report, tree_export
from opttree.bench.answers import main as eval_main
from opttree.bench.cli import register as register_bench
from opttree.bench.prompts import read_prompts
from opttree.config import DRAFT_FLAGS, LIMITS, RANDOM_HEAD, DecodeConfig, flag, from_args, models_from_args
from opttree.decoding.prompts import clean_prompt
from opttree.drafters.registry import KINDS
from opttree.engine import batch_cost
from opttree.errors import BadInput, OneLineParser, guarded
from opttree.models.bundled import engine_id, is_bundled
from opttree.models.draft_assets import card_acceptance
from opttree.models.loading import checked_model
from opttree.paths import is_hub_id
from opttree.trace import by_depth_text, percent
from opttree.trace_file import dumps
from opttree.train.card import heldout_questions
from opttree.trees.export import EXPORT_FORMATS, EXPORT_METHODS, engine_export, held_note, static_paths
from opttree.trees.sequoia import DEFAULT_ACCEPTANCE


def cmd_generate(args) -> int:
    from opttree.engine.speculative import run, warm_up  # torch stays out of `--help`

    cfg = decode_config(args, args.method)  # validate settings before loading anything
    clean_prompt(args.prompt)
    pair = load_from_args(args, need_draft=args.method != "ar")
    warm_up(pair)     # the tokens/s printed below is a warm run's
    trace = run(pair, args.prompt, cfg, chat=not args.no_chat, context=context_from_args(args, pair))
    if args.trace:
        with open(args.trace, "w", encoding="utf-8") as f:
            f.write(dumps(trace))
    if args.json:
        print(json.dumps({"output_text": trace["output_text"], "meta": trace["meta"],
                          "summary": trace["summary"]}, ensure_ascii=False, indent=1))
    else:
        print(trace["output_text"])
        s = trace["summary"]
        drafts = (f", {s['mean_accepted_draft_tokens']:.2f} accepted draft tokens/step, draft acceptance rate "
                  f"{percent(s['draft_acceptance_rate'])}, by depth {by_depth_text(s['acceptance_by_depth'])}"
                  if s["mean_nodes"] else "")
        print(f"\n[{cfg.method}] {s['new_tokens']} tokens in {s['steps']} steps: τ={s['tau']:.2f}, "
              f"{s['tokens_per_s']:.1f} tok/s{drafts}", file=sys.stderr)
    return 0


def _questions(prompts) -> list[dict]:
    """Benchmark prompts (bench/prompts.py) as the eval-style dicts the measuring code reads."""
    return [{"question_id": p.id, "category": p.category, "turns": [p.prompt]} for p in prompts]


def _vector(models) -> tuple[tuple[float, ...], str]:
    """The drafter's acceptance vector from its draft's card, without loading any weights, and where it
    came from."""
    kind = KINDS[models.kind()]
    draft = models.drafts().get(kind.name) or (kind.default_draft(models.target) if kind.load else None)
    card = card_acceptance(draft)
    if card:
        return card, f"the card of {Path(draft).name}"
    return DEFAULT_ACCEPTANCE, "the default prior: " + (f"{draft} has no card with one" if draft else
                                                        f"the {kind.name} drafter has no draft")


def _check_drafts(models) -> None:
    """A draft flag naming a local file that is not there is an error (a hub id its drafter loads from the hub,
    registry `hub_id`, and `random`, the untrained head, are not checked here)."""
    for kind, spec in models.drafts().items():
        if spec and spec != RANDOM_HEAD and not Path(spec).exists() and not KINDS[kind].hub_id(spec):
            raise BadInput(f"{DRAFT_FLAGS[kind]} {spec}: no such file or folder.")


def served_draft(models) -> str | None:
    """Where a serving engine finds the run's draft (vLLM's `model`, SGLang's --speculative-draft-model-path),
    when the draft flag names one it can load as given (`_served`); the bundled target as a classic draft (drafting
    for itself) by its hub release (bundled.engine_id). None for this project's own .safetensors drafts, a folder
    holding one (a head's folder) and the bundled ones (a format neither engine reads), and an untrained head (a
    name only this project's loaders know)."""
    spec = models.drafts().get(models.kind())
    if spec and is_bundled(spec):
        return engine_id(spec) if models.kind() == "classic" else None
    if not spec or spec == RANDOM_HEAD:
        return None
    return _served(spec, KINDS[models.kind()].hub_id(spec))


def served_target(models) -> str | None:
    """Where a serving engine loads the target (`vllm serve`'s model, SGLang's --model-path): the bundled target's
    hub release (bundled.engine_id: the full-precision model the GGUF was quantised from), else as `_served`
    says (a target checked_model refused never gets here)."""
    spec = str(models.target)
    return engine_id(spec) or _served(spec, is_hub_id(spec))


def _served(spec: str, hub_id: bool) -> str | None:
    """A model flag's value as an engine loads it: a hub id as written, a model folder (one with a config.json:
    a Hugging Face model, an official EAGLE checkpoint) made absolute; None for anything else."""
    if Path(spec).is_dir():
        return str(Path(spec).resolve()) if (Path(spec) / "config.json").is_file() else None
    return spec if hub_id else None


def check_writable(path: str | None, flag: str) -> None:
    """Refuse an output path that cannot be written (a folder, a parent that cannot be made or written)
    before any long work; the parent folders are made here."""
    if not path:
        return
    p = Path(path)
    if p.is_dir():
        raise BadInput(f"{flag} {path} is a folder: give a file path.")
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=p.parent):
            pass
        if p.exists() and not os.access(p, os.W_OK):
            raise PermissionError(f"{path} is read-only")
    except OSError as exc:
        raise BadInput(f"cannot write {flag} {path}: {exc.strerror or exc}.") from None


def at_least_one(args, *names: str) -> None:
    """Counts that must be whole numbers ≥ 1 (prompts, threads), checked before any model loads."""
    for name in names:
        value = getattr(args, name)
        if value is not None and value < 1:
            raise BadInput(f"{flag(name)} must be at least 1, got {value}.")


def _export_config(args) -> DecodeConfig:
    """export-tree's settings checked against their declarations (config.py) before any work: a static
    tree has a fixed size, so --nodes is 1 up to the node budget's bound (0, the auto budget, has no shape)."""
    hi = LIMITS["nodes"][1]
    if not 1 <= args.nodes <= hi:
        raise BadInput(f"--nodes must be between 1 and {hi:g} for a static tree, got {args.nodes}.")
    at_least_one(args, "fit_prompts", "limit", "threads")
    check_writable(args.report, "--report")
    return from_args(argparse.Namespace(method=args.method, nodes=args.nodes, threshold=args.threshold,
                                        max_depth=args.max_depth, max_new_tokens=args.max_new_tokens, temperature=0.0))


def _adaptive_static(args, cfg: DecodeConfig, log) -> tuple[list, dict]:
    """OPT-Tree's static stand-in fitted on held-out training prompts, and OPT-Tree against it on the
    compare prompts (the other held-out ones, or --compare-prompts)."""
    if args.threads:
        torch.set_num_threads(args.threads)
    held = heldout_questions(2 * args.fit_prompts)
    fit, others = held[0::2], held[1::2]
    compare_on = _questions(read_prompts(args.compare_prompts, args.limit)) if args.compare_prompts else others
    if not fit or not compare_on:
        raise BadInput("no prompts to fit on or to compare on (check --fit-prompts and --compare-prompts).")
    pair = load_from_args(args)
    paths, fitted = tree_export.fit_static(pair, fit, cfg, log)
    compared = tree_export.compare(pair, compare_on, cfg, paths, log)
    return paths, {"fit": fitted, "compare": compared, "compare_prompts": args.compare_prompts or "held-out training",
                   "decode": cfg.to_dict(), "draft": str(pair.draft_name)}


def cmd_export_tree(args) -> int:
    """Print a serving engine's config for a method's static tree (stdout), with notes on stderr."""
    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    cfg = _export_config(args)
    models = models_from_args(args)
    _check_drafts(models)
    checked_model(models.target)   # a target no engine loads (a file, a missing folder) is refused before any work
    kind = models.kind()
    engine_export([(0,)], args.format, kind)   # a drafter the engine has no method for is refused before any work
    report: dict = {"method": args.method, "nodes": args.nodes, "drafter": kind, "format": args.format}
    notes = []
    if args.method == "opt-tree":
        paths, report["adaptivity"] = _adaptive_static(args, cfg, log)
        c = report["adaptivity"]["compare"]
        log(tree_export.adaptivity_line(c, args.nodes))
    else:
        vector, source = _vector(models) if args.method == "sequoia" else (None, None)
        paths = static_paths(args.method, args.nodes, args.max_depth, vector)
        if vector is not None:
            report["acceptance_by_rank"], report["acceptance_source"] = list(vector), source
            notes.append(f"Sequoia's tree for the acceptance by rank from {source}.")
    notes += [n for n in [held_note(args.method, args.nodes, paths, args.max_depth)] if n]
    def write_report(text, said):
        if args.report:
            report.update(paths=[list(p) for p in paths], text=text, notes=said)
            Path(args.report).write_text(json.dumps(report, indent=1, ensure_ascii=False), encoding="utf-8")

    try:   # an OPT-Tree stand-in's shape is known only after its fit: a refusal still leaves the report
        out = engine_export(paths, args.format, kind, served_draft(models), served_target(models))
    except BadInput as exc:
        write_report(None, [*notes, str(exc)])
        raise
    notes += out.notes
    write_report(out.text, notes)
    print(out.text)
    for note in notes:
        log("note: " + note)
    return 0


def cmd_serving(args) -> int:
    """Measure the verify cost surface, model batched speculation, check it, write the dated page."""
    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    at_least_one(args, "check_prompts", "tree_prompts", "threads")
    check_writable(args.out, "--out")
    check_writable(args.json, "--json")
    if args.threads:
        torch.set_num_threads(args.threads)
    pair = load_from_args(args)
    surface = batch_cost.surface_with_draft(pair, refresh=args.refresh, log=log)
    data = serving_report.serving_data(pair, surface, heldout_questions(args.check_prompts), args.tree_prompts,
                                       log=log)
    prog = "python -m opttree" if sys.argv[0].endswith("__main__.py") else "opttree"
    text = serving_report.serving_markdown(data, f"{prog} {shlex.join(sys.argv[1:])}")
    for path, body in ((args.out, text), (args.json, json.dumps(data, indent=1, ensure_ascii=False))):
        if path:
            Path(path).write_text(body, encoding="utf-8")
    print(text)
    return 0


def register_serving(sub) -> None:
    """`export-tree` and `serving` (docs/serving.md)."""
    e = sub.add_parser("export-tree", help="print a vLLM --speculative-config or SGLang flags for a method's tree")
    e.add_argument("--format", choices=tuple(EXPORT_FORMATS), default="vllm",
                   help="; ".join(f"{k}: {v}" for k, v in EXPORT_FORMATS.items()) + " (default vllm)")
    e.add_argument("--method", choices=EXPORT_METHODS, required=True)
    e.add_argument("--nodes", type=int, default=25, help="tree size n (default 25)")
    e.add_argument("--max-depth", type=int, default=10, dest="max_depth")
    e.add_argument("--threshold", type=float, default=0.5, help="opt-tree: δ of the runs it is fitted on")
    e.add_argument("--max-new-tokens", type=int, default=96, dest="max_new_tokens", help="opt-tree: per run")
    e.add_argument("--fit-prompts", type=int, default=12, help="opt-tree: held-out training prompts to fit on "
                                                               "(as many others are compared on)")
    e.add_argument("--compare-prompts", default=None, help="opt-tree: compare on this prompt file instead")
    e.add_argument("--limit", type=int, default=12, help="opt-tree: prompts of --compare-prompts to use")
    e.add_argument("--threads", type=int, default=None)
    e.add_argument("--report", default=None, help="also write the tree, the text, the notes and (opt-tree) the "
                                                  "measured fit and comparison as JSON here")
    add_model_args(e)
    e.set_defaults(func=cmd_export_tree)
    s = sub.add_parser("serving", help="verify cost surface (B sequences × T tokens), batched throughput model, "
                                       "checks against real runs; writes a dated page")
    add_model_args(s)
    s.add_argument("--threads", type=int, default=None)
    s.add_argument("--refresh", action="store_true", help="measure the surface again even when one is cached")
    s.add_argument("--check-prompts", type=int, default=16, help="held-out training prompts for the batched AR check")
    s.add_argument("--tree-prompts", type=int, default=4, help="of those, the ones the Sequoia runs decode")
    s.add_argument("--out", default=None, help="write the page (markdown) here, e.g. benchmarks/serving.md")
    s.add_argument("--json", default=None, help="write the data (JSON) here")
    s.set_defaults(func=cmd_serving)


VERBOSE_HELP = "on an unexpected failure, print the traceback (otherwise one error line)"


def eval_misplaced(args) -> int:
    raise BadInput("write `opttree eval FLAGS` (eval first, after any --verbose): opttree eval --help lists its flags")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="opttree", description="OPT-Tree speculative decoding",
                                     allow_abbrev=False)   # `--verb eval` would reach the parser, not `main`
    parser.add_argument("--verbose", action="store_true", help=VERBOSE_HELP)
    sub = parser.add_subparsers(dest="command", required=True)
    g = sub.add_parser("generate", help="decode one prompt and print the text (or a JSON summary)")
    g.add_argument("--prompt", required=True)
    add_model_args(g)
    add_decode_args(g)
    g.add_argument("--trace", help="write the step trace (JSON) to this file")
    g.add_argument("--json", action="store_true", help="print a JSON summary instead of the text")
    g.add_argument("--no-chat", action="store_true", help="do not apply the chat template")
    g.set_defaults(func=cmd_generate)
    register_bench(sub)
    register_serving(sub)
    # `main` hands `opttree eval ...` to bench/answers.py before this parser (it has its own flags): listed
    # here for --help; a command line that reaches the parser with it anyway is told how to write it.
    ev = sub.add_parser("eval", add_help=False, help="answer a question file (MT-bench / Spec-Bench JSONL) into "
                        "FastChat-style answer files with the reference repo's flags; opttree eval --help lists them")
    ev.set_defaults(func=eval_misplaced)
    for command in sub.choices.values():   # `opttree generate ... --verbose` as well as `opttree --verbose ...`
        command.add_argument("--verbose", action="store_true", default=argparse.SUPPRESS, help=VERBOSE_HELP)
    return parser


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    verbose = False
    while argv[:1] == ["--verbose"]:
        verbose, argv = True, argv[1:]
    if argv[:1] == ["eval"]:  # answer files in the FastChat/Spec-Bench layout: a command with its own flags
        rest = argv[1:]
        verbose = verbose or "--verbose" in rest
        return guarded(lambda: eval_main([a for a in rest if a != "--verbose"]), verbose)
    args = build_parser().parse_args(argv)
    return guarded(lambda: args.func(args), verbose or getattr(args, "verbose", False))
