"""What drafted a run and how it drew, read from its trace's meta: the drafter's name for a reader, what its
p̂ mean, and the sampling settings of a sampled run. A draft model's p̂ is its belief that a path is accepted;
prompt lookup and Token Recycling have no draft model (config.TRAINING_FREE), and their p̂ only rank
candidates."""

from __future__ import annotations

from opttree.config import TRAINING_FREE
from opttree.trace import is_number

NAMES = {"eagle": "EAGLE head", "classic": "draft model", "early-exit": "early exit",
         "lookup": "prompt lookup", "recycling": "Token Recycling"}
# What p̂ is where no draft model drafts (drafters/lookup.py, drafters/recycling.py).
NO_MODEL_P_HAT = {
    "lookup": "p̂ is match evidence (the share of the prompt's matches that continue this way), so a chain every "
              "match agrees on has p̂ = 1 at each node and E(A) is its length",
    "recycling": "each node's q is the target's probability of its token after the same token when the target "
                 "last scored it, in another context, so p̂ (the product of q along the path) ranks candidates but "
                 "is no chance of acceptance"}


def drafter_kind(meta: dict | None) -> str:
    """The one reader of which drafter made a run: the trace's drafter kind (drafters/registry.py), "none"
    for AR. Older traces have no `drafter` field and name only the draft: a training-free kind is read from
    that name; '' where the kind is unknown."""
    meta = meta or {}
    if meta.get("drafter"):
        return str(meta["drafter"])
    draft = str(meta.get("draft") or "").lower()
    return next((kind for kind in TRAINING_FREE if kind in draft), "")


def drafter_name(meta: dict | None) -> str:
    kind = drafter_kind(meta)
    return NAMES.get(kind, kind)


def has_draft_model(meta: dict | None) -> bool:
    return drafter_kind(meta) not in TRAINING_FREE


def p_hat_meaning(meta: dict | None) -> str:
    """What the run's p̂ (and so E(A)) are: a sentence for a drafter without a draft model, '' otherwise."""
    return NO_MODEL_P_HAT.get(drafter_kind(meta), "")


def sampled_at(meta: dict | None) -> str:
    """How a run drew its tokens, from its meta: "" when greedy (temperature 0, or a trace without one), else
    "sampled at T = 0.7, top-k 20, top-p 0.9" (the filters only where on)."""
    meta = meta or {}
    temperature, top_k, top_p = meta.get("temperature"), meta.get("top_k"), meta.get("top_p")
    if not is_number(temperature) or temperature <= 0:      # an imported meta may hold anything
        return ""
    filters = (f", top-k {int(top_k)}" if is_number(top_k) and top_k > 0 and top_k == int(top_k) else "") + \
        (f", top-p {top_p:g}" if is_number(top_p) and top_p < 1 else "")
    return f"sampled at T = {temperature:g}{filters}"


def tree_temperature_text(meta: dict | None) -> str:
    """The tree temperature a run's p̂ were taken at, where it is not 1 ("tree temperature 0.7"); "" at 1 or
    where the meta holds no positive number (an imported meta may hold anything)."""
    value = (meta or {}).get("tree_temperature")
    return f"tree temperature {value:g}" if is_number(value) and value > 0 and value != 1 else ""
