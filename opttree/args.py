"""Command-line arguments shared by every command (`generate`, `bench`, `sweep`, `eval`).

The decode flags come from the settings' declarations (`config.add_decode_args`); this module adds
the model flags and turns parsed arguments into a loaded pair and a validated `DecodeConfig`.
"""

from __future__ import annotations

import argparse

from opttree.config import DRAFT_FLAGS, MODEL_DRAFTERS, TRAINING_FREE, add_decode_args, from_args

__all__ = ["add_decode_args", "add_model_args", "context_from_args", "decode_config", "given_drafts", "load_from_args"]


def add_model_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--base-model-path", "--target", dest="target", default="smollm2-135m-instruct",
                   help="target model: the bundled 'smollm2-135m-instruct', a hub id or a local path")
    p.add_argument("--drafter", choices=[*MODEL_DRAFTERS, *TRAINING_FREE], default="eagle",
                   help="eagle = feature head on the target's hidden states; classic = independent draft LM; "
                        "early-exit = the target's own first layers plus a trained exit head (EESD); "
                        "recycling = Token Recycling (a table of the target's own past candidates, no draft "
                        "model); lookup = prompt lookup (what followed the last tokens earlier in the text)")
    p.add_argument("--draft-model-path", default=None, help="classic draft: hub id, local path or .safetensors")
    p.add_argument("--ea-model-path", default=None, help="eagle feature head: .safetensors file or folder")
    p.add_argument("--exit-head-path", default=None, help="early-exit head: .safetensors file "
                   "(python -m opttree.train --kind early-exit)")
    p.add_argument("--exit-layer", type=int, default=None, metavar="N",
                   help="early-exit: draft with the target's first N layers (default: the layer the head was "
                        "trained after; another N needs a head trained for it)")
    p.add_argument("--device", default="auto", help="auto (CUDA when present), cpu, cuda, cuda:N")
    p.add_argument("--dtype", default="auto", help="auto (fp32 on CPU, bf16/fp16 on GPU), fp32, fp16, bf16")
    p.add_argument("--device-map", default=None, help="e.g. 'auto' to spread a big target over GPUs")
    p.add_argument("--trust-remote-code", action="store_true", help="allow model repos' own code (off by default)")
    p.add_argument("--retrieval-corpus", default=None, metavar="FILE",
                   help="a UTF-8 text file that retrieval (--retrieval on, and the lookup drafter) searches besides "
                        "the prompt and the output")


def decode_config(args, method: str):
    """The run's validated settings (`--nodes auto` is nodes = 0: sized per step from the machine's costs).
    A given retrieval corpus file is checked here too, before any model loads."""
    if getattr(args, "retrieval_corpus", None):
        from opttree.drafters.retrieval import check_corpus_file  # numpy/torch stay out of `--help`

        check_corpus_file(args.retrieval_corpus)
    return from_args(args, method)


def load_from_args(args, need_draft: bool = True):
    from opttree.models.loading import load_pair  # torch stays out of `--help`

    draft = given_drafts(args).get(args.drafter)
    drafter = args.drafter if need_draft else "none"
    return load_pair(args.target, drafter=drafter, draft=draft,
                     device=args.device, dtype=args.dtype, device_map=args.device_map,
                     trust_remote_code=args.trust_remote_code,
                     exit_layer=args.exit_layer if need_draft else None)


def given_drafts(args) -> dict:
    """{drafter: the draft its flag (DRAFT_FLAGS) names, or None}."""
    return {kind: getattr(args, flag.lstrip("-").replace("-", "_"), None) for kind, flag in DRAFT_FLAGS.items()}


def context_from_args(args, pair):
    """The run's drafter context: the retrieval corpus, tokenized once, when one is given."""
    from opttree.drafters.context import DraftContext  # numpy/torch stay out of `--help`
    from opttree.drafters.retrieval import load_corpus

    path = getattr(args, "retrieval_corpus", None)
    return DraftContext(corpus=load_corpus(path, pair.tokenizer) if path else None)
