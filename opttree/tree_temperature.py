"""The tree temperature: calibrating draft probabilities so that p̂ means "chance of acceptance".

OPT-Tree ranks nodes by p̂ (the product of draft probabilities on the path), sums the best n into
E(A) and stops deepening by the δ rule, so it all assumes p̂ estimates the chance the target accepts
the node. At T = 0 the target accepts a child exactly when it is the target's argmax, but a draft
distilled on the target's soft distribution spreads its mass like the target does: it is
under-confident about which token is the argmax, so trees come out too wide and too shallow.
Dividing the draft logits by a temperature below 1 sharpens them. The value is fitted per draft on
held-out training prompts (`python -m opttree.train.card --fit-temperature`, never on the eval set)
and stored in the draft's card; sampling (T > 0) keeps the draft's own distribution, which already
approximates the target's. Only the tree's shape changes: the verifier keeps output exact.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

CARD_KEY = "tree_temperature"


def card_temperature(draft: str | None) -> float:
    """The fitted tree temperature in the card beside a draft file, 1.0 when there is none."""
    if not draft:
        return 1.0
    card = Path(draft).with_suffix(".json")
    try:
        value = float(json.loads(card.read_text()).get(CARD_KEY, 1.0))
    except (OSError, ValueError, TypeError, AttributeError):
        return 1.0
    return value if math.isfinite(value) and 0.05 <= value <= 5.0 else 1.0


def for_decoding(pair, greedy: bool) -> float:
    """The temperature the drafter uses in this run: the draft's fitted one at T = 0, else 1."""
    return getattr(pair, "tree_temperature", 1.0) if greedy else 1.0
