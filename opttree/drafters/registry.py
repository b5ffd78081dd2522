"""The registry of drafter kinds: the one place that knows, for each kind, its command-line flag, its
bundled draft, how its draft loads, which Drafter drafts with it and what training kind makes it.

`with_drafter` / `load_pair` give a target its drafter's weights; `make_drafter` builds the run's
Drafter from them. The kinds' names are declared with the other settings (config.MODEL_DRAFTERS,
config.TRAINING_FREE); a test checks that this registry covers exactly those.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from opttree import paths
from opttree.config import BUNDLED_DRAFTS, DRAFT_FLAGS, MODEL_DRAFTERS, TRAINING_FREE, DecodeConfig
from opttree.drafters.base import Drafter
from opttree.drafters.classic import ClassicDrafter
from opttree.drafters.context import DraftContext
from opttree.drafters.early_exit import EarlyExitDrafter, check_matches_target
from opttree.drafters.feature_head import FeatureHeadDrafter
from opttree.drafters.fusion import RetrievalFusion
from opttree.drafters.lookup import LookupDrafter
from opttree.drafters.recycling import RecyclingDrafter
from opttree.drafters.tree_temperature import for_decoding
from opttree.errors import BadInput
from opttree.models import bundled
from opttree.models.draft_assets import (
    card_acceptance,
    card_temperature,
    check_card_target,
    load_exit_head,
    load_feature_head,
)
from opttree.models.loading import ModelPair, check_draft_vocab, load_classic_draft, load_target
from opttree.nets.eagle_checkpoint import is_checkpoint_id


@dataclass(frozen=True)
class DrafterKind:
    """One kind of drafter. Model drafters have a draft (`flag`, `bundled`, `load`, `train_kind`);
    training-free ones draft from the target's own outputs or the text (`label` names what drafts)."""

    name: str
    label: str
    build: Callable[[ModelPair, DecodeConfig, DraftContext, float], Drafter]  # (pair, cfg, context, temperature)
    load: Callable | None = None    # (draft spec, base pair, exit_layer, trust_remote_code) -> draft model
    flag: str | None = None         # the command-line flag that names its draft (config.ModelConfig)
    bundled: str | None = None      # its draft for the bundled target, a file in assets/drafts/
    train_kind: str | None = None   # `python -m opttree.train --kind` that trains its draft
    hub_id: Callable[[str], bool] = lambda spec: False   # whether a draft argument names a model on the hub

    @property
    def bundled_path(self) -> Path | None:
        return paths.DRAFTS / self.bundled if self.bundled else None

    def default_draft(self, target: str) -> str:
        """The draft this kind uses for `target` when none is named: the bundled one, or BadInput."""
        if target in bundled.BUNDLED_ALIASES and self.bundled:
            return str(self.bundled_path)
        hint = f" (train one: python -m opttree.train --kind {self.train_kind})" if self.train_kind else ""
        raise BadInput(f"target {target!r} has no bundled {self.name} draft: pass one with {self.flag}{hint}.")


def _load_exit(spec: str, base: ModelPair, exit_layer: int | None, trust_remote_code: bool):
    head = load_exit_head(spec, base.target, exit_layer)
    check_matches_target(base.target, head.exit_layer)   # the target's first layers run alone as the draft
    return head


def _recycling(pair: ModelPair, cfg: DecodeConfig, context: DraftContext, temperature: float) -> Drafter:
    table, vocab = context.table, pair.target.config.vocab_size
    if table is not None and table.vocab_size != vocab:
        table = None   # a table of another vocabulary cannot serve this target
    return RecyclingDrafter(vocab, table)


KINDS: dict[str, DrafterKind] = {k.name: k for k in (
    DrafterKind("eagle", "EAGLE-style feature head",
                lambda pair, cfg, ctx, t: FeatureHeadDrafter(pair.draft_model, pair.target,
                                                             pair.target.config.vocab_size, t),
                load=lambda spec, base, exit_layer, trc: load_feature_head(spec, base.target),
                flag=DRAFT_FLAGS["eagle"], bundled=BUNDLED_DRAFTS["eagle"], train_kind="head",
                hub_id=is_checkpoint_id),
    DrafterKind("classic", "classic draft LM",
                lambda pair, cfg, ctx, t: ClassicDrafter(pair.draft_model, pair.target.config.vocab_size, t),
                load=lambda spec, base, exit_layer, trc: load_classic_draft(spec, base.target, base.device,
                                                                            base.dtype, trc),
                flag=DRAFT_FLAGS["classic"], bundled=BUNDLED_DRAFTS["classic"], train_kind="classic",
                hub_id=paths.is_hub_id),
    DrafterKind("early-exit", "early exit (the target's first layers + an exit head)",
                lambda pair, cfg, ctx, t: EarlyExitDrafter(pair.draft_model, pair.target,
                                                           pair.target.config.vocab_size, t),
                load=_load_exit, flag=DRAFT_FLAGS["early-exit"], bundled=BUNDLED_DRAFTS["early-exit"],
                train_kind="early-exit"),
    DrafterKind("recycling", "token recycling table", _recycling),
    DrafterKind("lookup", "prompt lookup",
                lambda pair, cfg, ctx, t: LookupDrafter(pair.target.config.vocab_size, cfg.max_depth, ctx.corpus)),
)}

TRAINING_KINDS = {k.train_kind: k for k in KINDS.values() if k.train_kind}   # `opttree.train --kind` -> kind


def with_drafter(base: ModelPair, drafter: str | None, draft: str | None = None, exit_layer: int | None = None,
                 trust_remote_code: bool = False) -> ModelPair:
    """A pair that shares `base`'s target and tokenizer and drafts with `drafter` (a kind of KINDS, or
    none); `draft=None` picks the kind's bundled draft for the target."""
    pair = ModelPair(base.target, base.tokenizer, base.target_name, device=base.device, dtype=base.dtype,
                     target_spec=base.target_spec, public_target=base.public_target)
    if exit_layer is not None and drafter != "early-exit":
        raise BadInput("--exit-layer is for the early-exit drafter only.")
    if drafter in (None, "", "none"):
        return pair
    if drafter not in KINDS:
        raise BadInput(f"unknown drafter {drafter!r}: use {', '.join(MODEL_DRAFTERS + TRAINING_FREE)}.")
    kind = KINDS[drafter]
    pair.drafter_kind = drafter
    if kind.load is None:   # Token Recycling / prompt lookup: the target alone
        pair.draft_name = kind.label
        return pair
    draft = draft or kind.default_draft(base.target_spec)
    check_card_target(draft, base.target_spec)
    pair.draft_name, pair.tree_temperature = draft, card_temperature(draft)
    pair.acceptance_by_rank = card_acceptance(draft)
    pair.draft_model = kind.load(draft, base, exit_layer, trust_remote_code)
    if drafter == "classic":
        check_draft_vocab(pair.draft_model, pair.tokenizer)
    return pair


def load_pair(target: str = bundled.BUNDLED_ID, drafter: str = "eagle", draft: str | None = None,
              device: str = "auto", dtype: str = "auto", device_map: str | None = None,
              trust_remote_code: bool = False, exit_layer: int | None = None) -> ModelPair:
    """Load a target and its draft. `draft=None` picks the bundled draft of that kind; `exit_layer`
    (early-exit only) checks the head exits where asked (None: where it was trained to)."""
    base = load_target(target, device, dtype, device_map, trust_remote_code)
    return with_drafter(base, drafter, draft, exit_layer, trust_remote_code)


def resolve_retrieval(cfg: DecodeConfig, pair: ModelPair) -> DecodeConfig:
    """`cfg` with retrieval = "auto" made "on" or "off" for this pair: on where the run drafts with a
    draft model (the fusion's pruner; config.py has the measurement), off for AR and the drafters
    without one. Other values are returned as they are."""
    if cfg.retrieval != "auto":
        return cfg
    kind = KINDS.get(pair.drafter_kind)
    fuses = cfg.method != "ar" and kind is not None and kind.load is not None and pair.draft_model is not None
    return replace(cfg, retrieval="on" if fuses else "off")


def can_draft(pair: ModelPair) -> bool:
    """Whether the pair drafts: its drafter kind is known and, where that kind reads a draft model,
    the pair was loaded with one (a pair loaded for AR alone has none)."""
    kind = KINDS.get(pair.drafter_kind)
    return kind is not None and (kind.load is None or pair.draft_model is not None)


def make_drafter(pair: ModelPair, cfg: DecodeConfig, context: DraftContext | None = None) -> Drafter | None:
    """None for AR; otherwise the pair's drafter at the run's tree temperature, wrapped in retrieval
    fusion when `cfg.retrieval` is on. BadInput when the pair has no draft, or when retrieval fusion
    is asked of a drafter without a draft model."""
    if cfg.method == "ar":
        return None
    context = context or DraftContext()
    kind = KINDS.get(pair.drafter_kind)
    if not can_draft(pair):
        raise BadInput(f"method {cfg.method!r} needs a draft model; this pair was loaded without one.")
    if kind.load is None and cfg.retrieval == "on":
        raise BadInput(f"retrieval fusion merges retrieval into a draft model's tree; the {kind.name} "
                       "drafter has no draft model (prompt lookup is retrieval already).")
    drafter = kind.build(pair, cfg, context, for_decoding(pair, cfg))
    if cfg.retrieval != "on":
        return drafter
    return RetrievalFusion(drafter, cfg.max_depth, context.corpus)
