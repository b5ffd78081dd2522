"""`opttree` / `python -m opttree`: `generate`, plus the benchmark commands (`bench`, `sweep`, `eval`)."""

from __future__ import annotations

import argparse
import json
import sys
import traceback

from opttree.args import add_decode_args, add_model_args, context_from_args, decode_config, load_from_args
from opttree.bench.answers import main as eval_main
from opttree.bench.cli import register as register_bench
from opttree.decoding.prompts import clean_prompt
from opttree.errors import OptTreeError
from opttree.trace import by_depth_text, dumps


def cmd_generate(args) -> int:
    from opttree.decoding.speculative import run  # torch stays out of `--help`

    cfg = decode_config(args, args.method)  # validate settings before loading anything
    clean_prompt(args.prompt)
    pair = load_from_args(args, need_draft=args.method != "ar")
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
                  f"{s['draft_acceptance_rate'] * 100:.0f}%, by depth {by_depth_text(s['acceptance_by_depth'])}"
                  if s["mean_nodes"] else "")
        print(f"\n[{cfg.method}] {s['new_tokens']} tokens in {s['steps']} steps: τ={s['tau']:.2f}, "
              f"{s['tokens_per_s']:.1f} tok/s{drafts}", file=sys.stderr)
    return 0


VERBOSE_HELP = "on an unexpected failure, print the traceback (otherwise one error line)"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="opttree", description="OPT-Tree speculative decoding")
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
    for command in sub.choices.values():   # `opttree generate ... --verbose` as well as `opttree --verbose ...`
        command.add_argument("--verbose", action="store_true", default=argparse.SUPPRESS, help=VERBOSE_HELP)
    return parser


def one_line(text: str, limit: int = 500) -> str:
    """A message on one line (the CLI's promise: one `error:` line), shortened to `limit` characters."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def guarded(command, verbose: bool) -> int:
    """Run `command()`; every failure becomes one `error:` line on stderr and a non-zero status.

    Bad input (the project's own errors) exits with 2; anything unexpected with 1, its traceback
    printed only with `--verbose`."""
    try:
        return command()
    except OptTreeError as exc:
        print(f"error: {one_line(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 (the CLI's last line of defence: one line, not a traceback)
        if verbose:
            traceback.print_exc(file=sys.stderr)
        hint = "" if verbose else " (run again with --verbose for the traceback)"
        print(f"error: unexpected {type(exc).__name__}: {one_line(exc) or 'no message'}{hint}", file=sys.stderr)
        return 1


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
