"""Rates of drafting-and-verifying schemes other than the sampled optima and RRS.

* ``greedy_draft_acceptance``: the optimum for Hu et al.'s greedy drafts (the top k-1 tokens of q
  fixed, the last one sampled), docs/theory.md#greedy-drafts;
* ``kseq_acceptance``: K-SEQ (SpecTr, Sun et al. 2023) at its scaling ρ*, docs/theory.md#k-seq;
* ``topk_set_acceptance``: a fixed set of q's top k verified by this project's per-node
  target-sample rule, docs/theory.md#a-fixed-top-k-set.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from opttree.theory.distributions import validate


def greedy_draft_acceptance(p: Sequence[float] | np.ndarray, q: Sequence[float] | np.ndarray, k: int) -> float:
    """Optimal acceptance for greedy drafts: top k-1 tokens of q fixed, the k-th sampled.

    The last draft is sampled from q restricted to the tokens outside the fixed k-1 and
    renormalised. Exact: p(T) + Σ_{x ∉ T} min(p(x), q(x) / q(Σ \\ T)); k = 1 gives 1 - TV(p, q).
    derivation: docs/theory.md#greedy-drafts
    """
    pa, qa, k = validate(p, q, k)
    order = np.argsort(-qa, kind="stable")
    fixed, rest = order[: k - 1], order[k - 1:]
    q_rest = float(qa[rest].sum())
    value = float(pa[fixed].sum())
    if q_rest > 0:
        value += float(np.minimum(pa[rest], qa[rest] / q_rest).sum())
    return float(np.clip(value, 0.0, 1.0))


def _kseq_beta_fn(p: np.ndarray, q: np.ndarray) -> Callable[[float], float]:
    """β(ρ) = Σ_x min(q(x), p(x) / ρ), the chance that one draft passes K-SEQ's coin."""
    sup = q > 0
    ratio = p[sup] / q[sup]
    order = np.argsort(ratio)
    r_s = ratio[order]
    cp = np.concatenate(([0.0], np.cumsum(p[sup][order])))
    cq = np.concatenate(([0.0], np.cumsum(q[sup][order])))

    def beta(rho: float) -> float:
        # min(q, p / ρ) is p / ρ where p / q < ρ and q elsewhere.
        i = int(np.searchsorted(r_s, rho, side="left"))
        return float(cp[i] / rho + (cq[-1] - cq[i]))

    return beta


def _kseq_rho(p: np.ndarray, q: np.ndarray, k: int) -> float:
    """The smallest lossless ρ by bisection, its bracket's feasible end (docs/theory.md#k-seq)."""
    beta = _kseq_beta_fn(p, q)

    def feasible(rho: float) -> bool:
        b = beta(rho)
        return rho * b - 1.0 + (1.0 - b) ** k >= 0.0

    if k == 1 or feasible(1.0):
        return 1.0
    lo, hi = 1.0, float(k)
    for _ in range(1000):  # guards rounding; h(k) ≥ 0 mathematically
        if feasible(hi):
            break
        hi *= 1.0 + 1e-12
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        if feasible(mid):
            hi = mid
        else:
            lo = mid
    return hi


def kseq_scaling(p: Sequence[float] | np.ndarray, q: Sequence[float] | np.ndarray, k: int) -> float:
    """SpecTr's acceptance scaling ρ* for K-SEQ: smallest ρ with 1 - (1 - β(ρ))^k ≤ ρ β(ρ)."""
    pa, qa, k = validate(p, q, k)
    return _kseq_rho(pa, qa, k)


def kseq_acceptance(p: Sequence[float] | np.ndarray, q: Sequence[float] | np.ndarray, k: int) -> float:
    """Exact K-SEQ acceptance rate 1 - (1 - β(ρ*))^k with SpecTr's ρ* (``kseq_scaling``)."""
    pa, qa, k = validate(p, q, k)
    rho = _kseq_rho(pa, qa, k)
    b = _kseq_beta_fn(pa, qa)(rho)
    return float(np.clip(1.0 - (1.0 - b) ** k, 0.0, 1.0))


def topk_set_acceptance(p: Sequence[float] | np.ndarray, q: Sequence[float] | np.ndarray, k: int) -> float:
    """Acceptance of a fixed set T of the k most likely draft tokens (ties by index): p(T).

    The target samples its own token Y ~ p and the child equal to Y, if any, is accepted: lossless,
    and no lossless verifier does better for a fixed set (docs/theory.md#a-fixed-top-k-set).
    """
    pa, qa, k = validate(p, q, k)
    top = np.argsort(-qa, kind="stable")[:k]
    return float(np.clip(pa[top].sum(), 0.0, 1.0))
