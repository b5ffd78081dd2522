"""The best acceptance rate any lossless verifier reaches with k drafts sampled from q.

Hu et al., "Towards Optimal Multi-draft Speculative Decoding" (ICLR 2025): the optimum is a
minimum cut, formula (1) in docs/theory.md#the-dual-optimal-acceptance-is-a-minimum-cut. With
i.i.d. drafts it is minimised over prefixes of the tokens sorted by decreasing p/q, exactly, in
O(V log V). Without replacement it is exact over all 2^V cuts for small vocabularies and uses the
sorted prefixes with a quadrature above ``EXACT_WOR_MAX_V`` (`wor_prefix`, `wor_integral`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from opttree.theory.distributions import drop_null_tokens, ratio_order, validate
from opttree.theory.wor_prefix import wor_cut_values

# Vocabularies up to this size (after dropping tokens with p = q = 0) get the optimum without
# replacement by brute force: the exact law of the draft set and a minimum over all 2^V cuts, with
# no structural assumption (docs/theory.md#without-replacement-small-vocabularies).
EXACT_WOR_MAX_V = 10


def optimal_iid(p: np.ndarray, q: np.ndarray, k: int) -> float:
    """The optimum for i.i.d. drafts of validated p, q: (1) over sorted prefixes.

    derivation: docs/theory.md#sorted-prefixes-iid-drafts
    """
    p, q = drop_null_tokens(p, q)
    order = ratio_order(p, q)
    ps, qs = p[order], q[order]
    p_h = np.concatenate(([0.0], np.cumsum(ps)))  # p(H_m), H_m = first m sorted tokens
    q_s = np.concatenate((np.cumsum(qs[::-1])[::-1], [0.0]))  # q(Σ \ H_m), summed directly
    cut = (1.0 - p_h) + (1.0 - q_s**k)  # (1) with P(hit H) = 1 - (1 - q(H))^k
    return float(np.clip(cut.min(), 0.0, 1.0))


def _wor_set_distribution(q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact law of the set of the first min(k, |supp q|) draws without replacement.

    Returns bit masks over the indices of ``q`` and their probabilities; the recursion over the
    last token drawn is in docs/theory.md#without-replacement-small-vocabularies.
    """
    support = np.flatnonzero(q > 0)
    k_eff = min(k, support.size)
    layer: dict[int, float] = {0: 1.0}
    for _ in range(k_eff):
        nxt: dict[int, float] = {}
        for mask, prob in layer.items():
            rest = [int(x) for x in support if not (mask >> int(x)) & 1]
            remaining = math.fsum(float(q[x]) for x in rest)
            for x in rest:
                m2 = mask | (1 << x)
                nxt[m2] = nxt.get(m2, 0.0) + prob * float(q[x]) / remaining
        layer = nxt
    masks = np.fromiter(layer.keys(), dtype=np.int64, count=len(layer))
    probs = np.fromiter(layer.values(), dtype=np.float64, count=len(layer))
    return masks, probs


def _min_cut_all_subsets(p: np.ndarray, masks: np.ndarray, probs: np.ndarray) -> float:
    """Formula (1) minimised over all 2^V token sets H (V small)."""
    v = p.size
    hs = np.arange(1 << v, dtype=np.int64)
    bits = (hs[:, None] >> np.arange(v)) & 1
    p_keep = 1.0 - bits @ p  # p(Σ \ H)
    hit = ((hs[:, None] & masks[None, :]) != 0) @ probs  # P(D ∩ H ≠ ∅)
    return float(np.clip(np.min(p_keep + hit), 0.0, 1.0))


def optimal_wor_exact(p: np.ndarray, q: np.ndarray, k: int) -> float:
    """The optimum without replacement by brute force over all cuts (at most 20 tokens left)."""
    p, q = drop_null_tokens(p, q)
    if p.size > 20:
        raise ValueError("exact enumeration is for small vocabularies")
    masks, probs = _wor_set_distribution(q, k)
    return _min_cut_all_subsets(p, masks, probs)


def optimal_wor_many(p: np.ndarray, q: np.ndarray, ks: Sequence[int]) -> dict[int, float]:
    """The optimum without replacement of validated p, q for each k in ``ks``."""
    pp, qq = drop_null_tokens(p, q)
    if pp.size <= EXACT_WOR_MAX_V:
        return {k: optimal_wor_exact(pp, qq, k) for k in ks}
    return wor_cut_values(pp, qq, ks)


def optimal_acceptance(p: Sequence[float] | np.ndarray, q: Sequence[float] | np.ndarray, k: int,
                       replacement: bool = True) -> float:
    """Best acceptance rate of any lossless verifier for k drafts sampled from q.

    ``replacement=True``: the k drafts are i.i.d. from q; ``replacement=False``: they are drawn
    without replacement (each draw from q restricted to the tokens not drawn yet, renormalised;
    when q has fewer than k tokens of positive mass the draft set is that whole support).

    The value is the minimum cut (1) over token sets H: p(Σ \\ H) + P(the drafts hit H). With
    replacement it is exact, over sorted prefixes. Without replacement it is exact (all 2^V cuts)
    for V ≤ EXACT_WOR_MAX_V after dropping tokens with p = q = 0, and otherwise a quadrature over
    the same prefixes: error ~1e-12 (the tests require 1e-10 against exact enumeration), plus at
    most 1e-13 from ignoring draft tokens too rare to matter (docs/theory.md#accuracy).
    """
    pa, qa, k = validate(p, q, k)
    if replacement:
        return optimal_iid(pa, qa, k)
    return optimal_wor_many(pa, qa, [k])[k]
