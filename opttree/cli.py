"""`python -m opttree generate ...` (and the benchmark commands registered beside it)."""

from __future__ import annotations

import argparse
import json
import sys

from .errors import OptTreeError


def add_model_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--base-model-path", "--target", dest="target", default="smollm2-135m-instruct",
                   help="target model: the bundled 'smollm2-135m-instruct', a hub id or a local path")
    p.add_argument("--drafter", choices=["classic", "eagle"], default="eagle",
                   help="eagle = feature head on the target's hidden states; classic = independent draft LM")
    p.add_argument("--draft-model-path", default=None, help="classic draft: hub id, local path or .safetensors")
    p.add_argument("--ea-model-path", default=None, help="eagle feature head: .safetensors file or folder")
    p.add_argument("--device", default="auto", help="auto (CUDA when present), cpu, cuda, cuda:N")
    p.add_argument("--dtype", default="auto", help="auto (fp32 on CPU, bf16/fp16 on GPU), fp32, fp16, bf16")
    p.add_argument("--device-map", default=None, help="e.g. 'auto' to spread a big target over GPUs")
    p.add_argument("--trust-remote-code", action="store_true", help="allow model repos' own code (off by default)")
    p.add_argument("--tree-temperature", default=None,
                   help="divide draft logits by this when building trees at T=0 (default: the draft card's "
                        "fitted value, else 1; see opttree/tree_temperature.py)")


def node_budget(text: str):
    if text == "auto":
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: {text!r} (a number or 'auto')") from None


def resolved_nodes(args) -> int:
    """`--nodes auto` -> the default budget for the device the run will use (config.default_nodes)."""
    if args.nodes != "auto":
        return args.nodes
    from .config import default_nodes
    from .loading import resolve_device

    on_gpu = getattr(args, "device_map", None) or resolve_device(args.device).type == "cuda"
    return default_nodes("cuda" if on_gpu else "cpu")


def add_decode_args(p: argparse.ArgumentParser, method: bool = True) -> None:
    from .config import METHODS

    if method:
        p.add_argument("--method", choices=METHODS, default="opt-tree")
    p.add_argument("--nodes", type=node_budget, default="auto",
                   help="node budget n; auto (default): the paper's 60 on CUDA, the measured best budget on CPU")
    p.add_argument("--threshold", type=float, default=0.5, help="δ: deepen while E(A) grows by more than this")
    p.add_argument("--max-depth", "--max_depth", dest="max_depth", type=int, default=10)
    p.add_argument("--temperature", type=float, default=0.0)
    p.add_argument("--top-p", type=float, default=1.0)
    p.add_argument("--top-k", type=int, default=0)
    p.add_argument("--max-new-tokens", type=int, default=128)
    p.add_argument("--seed", type=int, default=0)


def load_from_args(args, need_draft: bool = True):
    from .loading import load_pair

    draft = args.ea_model_path if args.drafter == "eagle" else args.draft_model_path
    return load_pair(args.target, drafter=args.drafter if need_draft else "none", draft=draft,
                     device=args.device, dtype=args.dtype, device_map=args.device_map,
                     trust_remote_code=args.trust_remote_code)


def decode_config(args, method: str):
    from .config import DecodeConfig
    from .tree_temperature import checked

    # On the command line a given tree temperature must be a real one (0 is not "the card's").
    tree_t = getattr(args, "tree_temperature", None)
    return DecodeConfig(method=method, nodes=resolved_nodes(args), threshold=args.threshold,
                        max_depth=args.max_depth, temperature=args.temperature, top_p=args.top_p,
                        top_k=args.top_k, max_new_tokens=args.max_new_tokens, seed=args.seed,
                        tree_temperature=0.0 if tree_t is None else checked(tree_t))


def cmd_generate(args) -> int:
    from .prompts import clean_prompt
    from .speculative import run
    from .trace import dumps

    cfg = decode_config(args, args.method)  # validate settings before loading anything
    clean_prompt(args.prompt)
    pair = load_from_args(args, need_draft=args.method != "ar")
    trace = run(pair, args.prompt, cfg, chat=not args.no_chat)
    if args.trace:
        with open(args.trace, "w", encoding="utf-8") as f:
            f.write(dumps(trace))
    if args.json:
        print(json.dumps({"output_text": trace["output_text"], "meta": trace["meta"],
                          "summary": trace["summary"]}, ensure_ascii=False, indent=1))
    else:
        print(trace["output_text"])
        s = trace["summary"]
        print(f"\n[{cfg.method}] {s['new_tokens']} tokens in {s['steps']} steps: τ={s['tau']:.2f}, "
              f"{s['tokens_per_s']:.1f} tok/s", file=sys.stderr)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m opttree", description="OPT-Tree speculative decoding")
    sub = parser.add_subparsers(dest="command", required=True)
    g = sub.add_parser("generate", help="decode one prompt and print the text (or a JSON summary)")
    g.add_argument("--prompt", required=True)
    add_model_args(g)
    add_decode_args(g)
    g.add_argument("--trace", help="write the step trace (JSON) to this file")
    g.add_argument("--json", action="store_true", help="print a JSON summary instead of the text")
    g.add_argument("--no-chat", action="store_true", help="do not apply the chat template")
    g.set_defaults(func=cmd_generate)
    for register in _extra_commands():
        register(sub)
    return parser


def _extra_commands():
    """Other command modules (benchmarks) add their sub-commands here when present."""
    out = []
    try:
        from .bench_cli import register
        out.append(register)
    except ImportError:
        pass
    return out


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except OptTreeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
