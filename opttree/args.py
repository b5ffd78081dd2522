"""Command-line arguments shared by every command (`generate`, `bench`, `sweep`, `eval`).

Both kinds of flags come from the settings' declarations (`config.add_decode_args`,
`config.add_model_args`); this module turns parsed arguments into a loaded pair, a validated
`DecodeConfig` and the run's drafter context.
"""

from __future__ import annotations

from opttree.config import add_decode_args, add_model_args, from_args, models_from_args

__all__ = ["add_decode_args", "add_model_args", "context_from_args", "decode_config", "load_from_args"]


def decode_config(args, method: str):
    """The run's validated settings (`--nodes auto` is nodes = 0: sized per step from the machine's costs).
    A given retrieval corpus file is checked here too, before any model loads."""
    if getattr(args, "retrieval_corpus", None):
        from opttree.drafters.retrieval import check_corpus_file  # numpy/torch stay out of `--help`

        check_corpus_file(args.retrieval_corpus)
    return from_args(args, method)


def load_from_args(args, need_draft: bool = True):
    """The pair the model flags name; `need_draft=False` loads the target alone (AR)."""
    from opttree.drafters.registry import load_pair  # torch stays out of `--help`

    m = models_from_args(args)
    kind = m.kind()
    return load_pair(m.target, drafter=kind if need_draft else "none", draft=m.drafts().get(kind),
                     device=m.device, dtype=m.dtype, device_map=m.device_map,
                     trust_remote_code=m.trust_remote_code, exit_layer=m.exit_layer if need_draft else None)


def context_from_args(args, pair):
    """The run's drafter context: the retrieval corpus, tokenized once, when one is given."""
    from opttree.drafters.context import DraftContext  # numpy/torch stay out of `--help`
    from opttree.drafters.retrieval import load_corpus

    path = getattr(args, "retrieval_corpus", None)
    return DraftContext(corpus=load_corpus(path, pair.tokenizer) if path else None)
