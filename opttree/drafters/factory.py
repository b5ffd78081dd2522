"""The drafter a run uses: the pair's kind of draft, at the run's tree temperature, with what the
run's context brings (a session's Token Recycling table, a retrieval corpus)."""

from __future__ import annotations

from opttree.config import TRAINING_FREE, DecodeConfig
from opttree.drafters.classic import ClassicDrafter
from opttree.drafters.context import DraftContext
from opttree.drafters.early_exit import EarlyExitDrafter
from opttree.drafters.feature_head import FeatureHeadDrafter
from opttree.drafters.fusion import RetrievalFusion
from opttree.drafters.lookup import LookupDrafter
from opttree.drafters.recycling import RecyclingDrafter
from opttree.drafters.tree_temperature import for_decoding
from opttree.errors import BadInput


def make_drafter(pair, cfg: DecodeConfig, context: DraftContext | None = None):
    """None for AR; otherwise the pair's drafter: the classic, feature-head or early-exit drafter (wrapped in
    retrieval fusion when `cfg.retrieval` is on), Token Recycling or prompt lookup. BadInput when the
    pair has no draft, or when retrieval fusion is asked of a drafter without a draft model."""
    if cfg.method == "ar":
        return None
    context = context or DraftContext()
    vocab = pair.target.config.vocab_size
    if pair.drafter_kind in TRAINING_FREE:
        return _training_free(pair, cfg, context, vocab)
    temp = for_decoding(pair, cfg)
    if pair.drafter_kind == "eagle":
        drafter = FeatureHeadDrafter(pair.draft_model, pair.target, vocab, temp)
    elif pair.drafter_kind == "early-exit":
        drafter = EarlyExitDrafter(pair.draft_model, pair.target, vocab, temp)
    elif pair.drafter_kind == "classic":
        drafter = ClassicDrafter(pair.draft_model, vocab, temp)
    else:
        raise BadInput(f"method {cfg.method!r} needs a draft model; this pair was loaded without one.")
    if cfg.retrieval != "on":
        return drafter
    return RetrievalFusion(drafter, cfg.max_depth, context.corpus)


def _training_free(pair, cfg: DecodeConfig, context: DraftContext, vocab: int):
    if cfg.retrieval == "on":
        raise BadInput(f"retrieval fusion merges retrieval into a draft model's tree; the {pair.drafter_kind} "
                       "drafter has no draft model (prompt lookup is retrieval already).")
    if pair.drafter_kind == "recycling":
        table = context.table
        if table is not None and table.vocab_size != vocab:
            table = None   # a table of another vocabulary cannot serve this target
        return RecyclingDrafter(vocab, table)
    return LookupDrafter(vocab, cfg.max_depth, context.corpus)
