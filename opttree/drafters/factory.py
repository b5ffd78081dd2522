"""The drafter a run uses: the pair's kind of draft, at the run's tree temperature."""

from __future__ import annotations

from opttree.config import DecodeConfig
from opttree.drafters.classic import ClassicDrafter
from opttree.drafters.feature_head import FeatureHeadDrafter
from opttree.drafters.tree_temperature import for_decoding
from opttree.errors import BadInput


def make_drafter(pair, cfg: DecodeConfig):
    """None for AR; the classic or feature-head drafter otherwise (BadInput when the pair has no draft)."""
    if cfg.method == "ar":
        return None
    vocab = pair.target.config.vocab_size
    temp = for_decoding(pair, cfg)
    if pair.drafter_kind == "eagle":
        return FeatureHeadDrafter(pair.draft_model, pair.target, vocab, temp)
    if pair.drafter_kind == "classic":
        return ClassicDrafter(pair.draft_model, vocab, temp)
    raise BadInput(f"method {cfg.method!r} needs a draft model; this pair was loaded without one.")
