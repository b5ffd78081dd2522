"""The optimum without replacement at any vocabulary size, over sorted prefix cuts.

The cuts are the prefixes of the tokens sorted by decreasing p/q
(docs/theory.md#sorted-prefixes-without-replacement). For k ≤ 2 the chance that every draw avoids
a cut has a closed form; k ≥ 3 goes to the exponential-clock quadrature of `wor_integral`. Draft
tokens too rare to change the rate by more than 1e-13 are dropped first
(docs/theory.md#dropping-negligible-draft-tokens).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from opttree.theory.distributions import drop_null_tokens, ratio_order
from opttree.theory.wor_integral import wor_integral_min_cut

_TRUNC_TOL = 1e-13  # largest change in a rate allowed when dropping negligible draft tokens


def _drop_negligible_drafts(q: np.ndarray, k: int) -> np.ndarray:
    """Zero the smallest draft masses while k δ / (1 - T_{k-1}) ≤ _TRUNC_TOL.

    derivation: docs/theory.md#dropping-negligible-draft-tokens
    """
    outside = float(np.sort(q)[::-1][k - 1:].sum())  # 1 - T_{k-1}, summed directly
    budget = _TRUNC_TOL * outside / k
    if budget <= 0.0:
        return q
    pos = np.flatnonzero(q > 0)
    small = pos[np.argsort(q[pos], kind="stable")]
    n_drop = int(np.searchsorted(np.cumsum(q[small]), budget, side="right"))
    if n_drop == 0:
        return q
    out = q.copy()
    out[small[:n_drop]] = 0.0
    return out / out.sum()


def _stay_k2(qs: np.ndarray, q_s: np.ndarray, lam: np.ndarray) -> np.ndarray:
    """W(S_m) for k = 2 and every prefix m: q(S) - λ Σ_{x ∈ S} q(x) / (1 - q(x)).

    derivation: docs/theory.md#two-drafts-in-closed-form
    """
    others = 1.0 - qs  # exact to relative 2^-53 while q(x) ≤ 1/2 ...
    i_top = int(np.argmax(qs))
    if qs[i_top] > 0.5:  # ... and for the one token above 1/2, summed directly
        others[i_top] = float(np.sum(np.delete(qs, i_top)))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(others > 0, qs / others, 0.0)
    a = np.concatenate((np.cumsum(ratio[::-1])[::-1], [0.0]))
    return np.clip(q_s - lam * a, 0.0, 1.0)


def wor_cut_values(p: np.ndarray, q: np.ndarray, ks: Sequence[int]) -> dict[int, float]:
    """Optimal acceptance without replacement for several k via sorted prefixes (any V)."""
    p, q = drop_null_tokens(p, q)
    q = _drop_negligible_drafts(q, max(ks))
    n_support = int(np.count_nonzero(q > 0))
    order = ratio_order(p, q)
    ps, qs = p[order], q[order]
    p_h = np.concatenate(([0.0], np.cumsum(ps)))  # p(H_m), m = 0..n
    lam = np.concatenate(([0.0], np.cumsum(qs)))  # q(H_m)
    q_s = np.concatenate((np.cumsum(qs[::-1])[::-1], [0.0]))  # q(S_m)
    n_s = np.concatenate((np.cumsum((qs > 0)[::-1])[::-1], [0]))  # |S_m ∩ supp q|
    out: dict[int, float] = {}
    integral: list[int] = []
    for k in sorted(set(ks)):
        if k >= n_support:
            # The draft set is the whole support, deterministically: (1) gives p(supp q).
            out[k] = float(np.clip(ps[qs > 0].sum(), 0.0, 1.0))
            continue
        if k == 1:
            stay = q_s.copy()
        elif k == 2:
            stay = _stay_k2(qs, q_s, lam)
        else:
            integral.append(k)
            continue
        stay[n_s < k] = 0.0
        stay[lam == 0] = 1.0
        out[k] = float(np.clip(np.min((1.0 - p_h) + (1.0 - stay)), 0.0, 1.0))
    if integral:
        out.update(wor_integral_min_cut(qs, p_h, lam, q_s, n_s, integral))
    return out
