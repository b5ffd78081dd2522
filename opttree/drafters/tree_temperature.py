"""The tree temperature: rescaling draft probabilities before OPT-Tree ranks nodes by them.

OPT-Tree ranks nodes by p̂ (the product of draft probabilities on the path), sums the best n into
E(A) and stops deepening by the δ rule, so it treats p̂ as the chance the target accepts the node.
At T = 0 the target accepts a child exactly when it is the target's argmax, while a draft distilled
on the target's soft distribution spreads its mass over runner-up tokens the way the target does.
Dividing the draft logits by a temperature below 1 moves mass to the top candidates, so the tree
spends its budget on deeper chains of likely tokens instead of on siblings that are rarely the argmax.
The value is chosen per draft for τ on held-out prompts, never the eval set: held-out *training*
prompts, and for the head the opening turns of held-out ShareGPT conversations too
(`python -m opttree.train.card --fit-temperature N [--fit-sharegpt N]`, or the same flags at the end
of training), and stored in the draft's card. Measured on the shipped head's fit prompts (its card's
`tree_temperature_fit`): at 1.0 E(A) is below the accepted length (1.84 vs 2.03), and the τ-best
temperature (0.7) overshoots it (3.04 vs 2.11), so the gain comes from the tree's shape rather than
from E(A) matching A.
Sampling (T > 0) drafts at tree temperature 1 unless the run sets its own: the run's temperature makes
q sharper than the draft is right, so E(A) overstates the accepted length: τ gains nothing at a fixed
budget, and the auto budget's bigger trees run slower (measured in
benchmarks/sampling_tree_temperature.md). Only the tree changes: the verifier keeps output exact.

The fitted value is for a fixed node budget (it is fitted at the card's n = 60). The auto budget
(trees/auto_size.py) sizes each tree by expected tokens per second and reads p̂ as the chance of
acceptance, which a temperature below 1 overstates, so it grows trees whose extra nodes do not pay
(measured in docs/drafts.md, "The tree temperature"). Under the auto budget the default is
therefore 1; a run's own setting still wins.
"""

from __future__ import annotations

from opttree.config import TRAINING_FREE


def for_decoding(pair, cfg) -> float:
    """The temperature the drafter uses in this run: the run's own setting when it gives one (any T), else
    the draft's fitted one at T = 0 and a fixed budget, and 1 under the auto budget or when sampling
    (module docstring). Token Recycling and prompt lookup have no draft logits to rescale: always 1 (what
    meta records)."""
    if getattr(pair, "drafter_kind", "") in TRAINING_FREE:
        return 1.0
    if cfg.tree_temperature:
        return cfg.tree_temperature
    return 1.0 if cfg.auto_nodes or not cfg.greedy else getattr(pair, "tree_temperature", 1.0)
