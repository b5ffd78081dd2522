"""Acceptance-rate theory for multi-draft speculative decoding (one decoding step).

A drafter proposes ``k`` draft tokens for the next position, the target model has next-token
distribution ``p`` and a lossless verifier either accepts one draft (the emitted token equals it)
or emits a correction; the emitted token is always distributed exactly as ``p``. This module
computes, for one step with target ``p`` and draft distribution ``q`` over the same vocabulary:

* ``optimal_acceptance``: the best acceptance rate any lossless verifier reaches when the drafts
  are sampled i.i.d. from ``q`` or without replacement from ``q`` (Hu et al., "Towards Optimal
  Multi-draft Speculative Decoding", ICLR 2025), through the max-flow/min-cut dual;
* ``greedy_draft_acceptance``: the optimum for that paper's greedy drafts (the top ``k-1`` tokens
  of ``q`` fixed, the last one sampled);
* ``rrs_acceptance`` and ``kseq_acceptance``: the exact rates of two existing verifiers, recursive
  rejection sampling (SpecInfer-style) and K-SEQ (SpecTr);
* ``topk_set_acceptance``: the rate of a deterministic top-k set verified by the per-node
  target-sample rule this project uses;
* ``scheme_table``, ``toy_distributions`` and ``wor_beats_iid_example`` for the Theory tab.

Everything is plain numpy (no torch) and each rate takes well under 0.2 s at a real vocabulary
(V = 49,152, k ≤ 8). All quantities are exact up to floating point except two, whose error is
documented where they are computed: the optimum without replacement at V > ``EXACT_WOR_MAX_V``
(a quadrature, ~1e-12 in the tests, after dropping draft tokens that move the rate by at most
1e-13) and recursive rejection sampling without replacement when its history tree is too large
to enumerate (a seeded, Rao-Blackwellised Monte Carlo with a reported standard error).

Notation used throughout the comments: ``Σ`` is the vocabulary, ``H ⊆ Σ`` a token set,
``S = Σ \\ H`` its complement, ``p(H)`` and ``q(H)`` masses, and ``ρ(x) = p(x) / q(x)`` the
likelihood ratio (``+inf`` where ``q(x) = 0 < p(x)``).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterable, Sequence

import numpy as np

__all__ = [
    "EXACT_WOR_MAX_V",
    "SCHEMES",
    "greedy_draft_acceptance",
    "kseq_acceptance",
    "kseq_scaling",
    "optimal_acceptance",
    "rrs_acceptance",
    "rrs_wor_estimate",
    "scheme_table",
    "topk_set_acceptance",
    "toy_distributions",
    "wor_beats_iid_example",
]

# Vocabularies up to this size (after dropping tokens with p = q = 0) get the optimum without
# replacement by brute force: the exact distribution of the draft set and a minimum over all
# 2^V cuts, with no structural assumption. Larger ones use the sorted-prefix quadrature below.
EXACT_WOR_MAX_V = 10

# Recursive rejection sampling without replacement is enumerated exactly when its history tree
# (leaves times vocabulary size, the cost of the enumeration) is at most this large, and
# estimated by Monte Carlo otherwise.
RRS_EXACT_MAX_WORK = 2_000_000
RRS_MC_PATHS = 20000
RRS_MC_SEED = 0

# Quadrature settings for P(all k draws without replacement land in S), see _wor_stay_integral.
_STEP = 0.25  # trapezoid step in u = log t (1e-15 accuracy in the tests; 0.35 gives ~1e-10)
_TAIL_TOL = 1e-14  # both truncated tails are bounded by this, per cut
_BIG = 50.0  # clocks with rate * t >= _BIG count as surely rung (error e^-50 per clock)
_PHI_POWER = 6  # smoothness of the partition of unity that splits the integral
_U_LIMITS = (-80.0, 160.0)  # hard bounds on u; reached only by pathological inputs
_TRUNC_TOL = 1e-13  # largest change in a rate allowed when dropping negligible draft tokens


# --------------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------------


def _check_k(k: object) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise ValueError(f"k must be an integer >= 1, got {k!r}")
    if k < 1:
        raise ValueError(f"k must be an integer >= 1, got {k}")
    return int(k)


def _as_distribution(x: object, name: str) -> np.ndarray:
    a = np.asarray(x, dtype=np.float64)
    if a.ndim != 1 or a.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array, got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} contains non-finite values")
    if np.any(a < 0):
        raise ValueError(f"{name} has negative entries (min {a.min():.3g})")
    total = float(a.sum())
    if abs(total - 1.0) > 1e-6:
        raise ValueError(f"{name} must sum to 1 within 1e-6, sums to {total:.9g}")
    return a / total


def _validate(p: object, q: object, k: object) -> tuple[np.ndarray, np.ndarray, int]:
    pa = _as_distribution(p, "p")
    qa = _as_distribution(q, "q")
    if pa.shape != qa.shape:
        raise ValueError(f"p and q must have the same length, got {pa.size} and {qa.size}")
    return pa, qa, _check_k(k)


def _drop_null_tokens(p: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    # A token with p = q = 0 is never drafted and never emitted: it changes no coupling.
    keep = (p > 0) | (q > 0)
    return p[keep], q[keep]


def _ratio_order(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Token order by decreasing p/q (q = 0 < p first, as +inf); ties keep index order."""
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = np.where(q > 0, p / np.where(q > 0, q, 1.0), np.inf)
    return np.argsort(-rho, kind="stable")


# --------------------------------------------------------------------------------------------
# The dual: optimal acceptance = minimum cut
# --------------------------------------------------------------------------------------------
#
# Let D be the random draft set (the set of distinct tokens in the draft tuple) and Y ~ p the
# emitted token. A lossless verifier is a coupling of D and Y; it accepts when Y ∈ D. The best
# acceptance is a max-flow: a bipartite network with a source edge of capacity P(D = d) into
# every draft set d, an infinite edge d -> y for every y ∈ d, and a sink edge of capacity p(y)
# out of every token y. A flow is exactly the part of a coupling with Y ∈ D (any leftover mass
# is coupled arbitrarily), so its maximum is the optimal acceptance α*. A finite cut keeps a
# token set S on the source side together with every draft set d ⊆ S (an edge d -> y with y ∉ S
# would be cut and is infinite); it cuts the sink edges of S and the source edges of the sets
# d ⊄ S. With H = Σ \ S, max-flow = min-cut gives
#
#     α* = min_H [ p(Σ \ H) + P(D ∩ H ≠ ∅) ].                                               (1)
#
# H = ∅ and H = Σ both give 1, so α* ≤ 1. For k = 1, P(D ∩ H ≠ ∅) = q(H) and (1) is
# 1 - max_H (p(H) - q(H)) = 1 - TV(p, q), single-draft speculative sampling.
#
# Sorted prefixes, i.i.d. drafts. Here P(D ∩ H ≠ ∅) = 1 - (1 - q(H))^k, so (1) minimises
# 2 - F(H) with F(H) = p(H) + g(q(H)) and g(s) = (1 - s)^k convex. Take i ∈ H and j ∉ H with
# ρ(j) > ρ(i) and write c = -g'(q(H)) ≥ 0. Convexity gives g(s + d) - g(s) ≥ g'(s) d for either
# sign of d, hence F(H ∪ {j}) - F(H) ≥ q(j) (ρ(j) - c) and F(H \ {i}) - F(H) ≥ q(i) (c - ρ(i)):
# if c ≤ ρ(j) adding j does not lower F, otherwise c > ρ(j) > ρ(i) and removing i does not.
# Adding the largest-ratio token outside H, or removing the smallest-ratio token inside it,
# strictly reduces the number of "inversions" (pairs i ∈ H, j ∉ H with ρ(j) > ρ(i)), so from
# an optimal H we reach an optimal H without inversions: every ratio inside is ≥ every ratio
# outside. Within a group of equal ratio r the objective is p(rest) + r s + g(q(rest) + s),
# convex in the group mass s taken, so the whole group or none of it is optimal. Hence the
# minimum is attained on a prefix of the tokens sorted by DECREASING p/q (with ties broken in
# any fixed way, e.g. by index): an O(V log V) computation. Tokens with q = 0 < p come first
# (they add p for free) and tokens with p = 0 < q last.
#
# Without replacement the same prefix family is used for V > EXACT_WOR_MAX_V. The exchange step
# then needs D_i(S ∪ {i}) / q(i) ≥ D_j(S) / q(j) for i ∉ S, j ∈ S, where D_x(A) is the
# probability that the first k draws lie in A and include x; we check this by hand for k = 2
# only. Hu et al. state the prefix structure for sampling without replacement too; the test
# suite checks it against a linear program over couplings and against brute force over all
# cuts on hundreds of random small instances (including ties and q with zeros; 3,000 more were
# checked while writing this), and for V ≤ EXACT_WOR_MAX_V this module does not rely on it.


def _optimal_iid(p: np.ndarray, q: np.ndarray, k: int) -> float:
    p, q = _drop_null_tokens(p, q)
    order = _ratio_order(p, q)
    ps, qs = p[order], q[order]
    p_h = np.concatenate(([0.0], np.cumsum(ps)))  # p(H_m), H_m = first m sorted tokens
    q_s = np.concatenate((np.cumsum(qs[::-1])[::-1], [0.0]))  # q(Σ \ H_m), summed directly
    cut = (1.0 - p_h) + (1.0 - q_s**k)  # (1) with P(hit H) = 1 - (1 - q(H))^k
    return float(np.clip(cut.min(), 0.0, 1.0))


# --- without replacement, exact for small vocabularies ---------------------------------------


def _wor_set_distribution(q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact law of the set of the first min(k, |supp q|) draws without replacement.

    Returns bit masks over the indices of ``q`` and their probabilities. The probability that
    the first j draws form the set A obeys P(A) = Σ_{x ∈ A} P(A \\ {x}) q(x) / (1 - q(A \\ {x})),
    summed over the last token x; the remaining mass is summed directly, not as 1 - q(A).
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


def _optimal_wor_exact(p: np.ndarray, q: np.ndarray, k: int) -> float:
    p, q = _drop_null_tokens(p, q)
    if p.size > 20:
        raise ValueError("exact enumeration is for small vocabularies")
    masks, probs = _wor_set_distribution(q, k)
    return _min_cut_all_subsets(p, masks, probs)


# --- without replacement, large vocabularies --------------------------------------------------
#
# For a cut H with λ = q(H) > 0 and S = Σ \ H we need W(S) = P(the first k draws without
# replacement all lie in S); then P(D ∩ H ≠ ∅) = 1 - W(S).
#
# Exponential clocks. Give every token x an independent clock T_x ~ Exp(q(x)). The order in
# which the clocks ring is distributed exactly as sampling without replacement from q (the
# first ring is x with probability q(x) / Σ q, and memorylessness restarts the race among the
# rest). The first ring in H happens at T_H = min_{x ∈ H} T_x ~ Exp(λ), independent of the S
# clocks, and by time t the count N_S(t) of rung S clocks is Poisson-binomial with success
# probabilities π_x(t) = 1 - exp(-q(x) t). The first k draws lie in S iff k S-clocks ring
# before T_H, so, with G(t) = P(N_S(t) ≤ k - 1):
#
#     W(S) = ∫_0^∞ λ e^{-λt} (1 - G(t)) dt.                                                  (2)
#
# Splitting the integral. 1 - G(t) vanishes like t^k at t -> 0 while G(t) vanishes at t -> ∞
# (once |S ∩ supp q| ≥ k); a smooth partition of unity φ(t) = 1 - (1 - e^{-t})^n (n =
# _PHI_POWER; φ -> 1 at 0 and -> 0 at ∞) uses each where it is small:
#
#     W = ∫ λ e^{-λt} φ (1 - G) dt + ∫ λ e^{-λt} (1 - φ) dt - ∫ λ e^{-λt} (1 - φ) G dt
#       = J(λ) + ∫ λ e^{-λt} (φ(t) - G(t)) dt,
#
# where J(λ) = E[(1 - e^{-T})^n] for T ~ Exp(λ). Since U = e^{-T} ~ Beta(λ, 1),
# J(λ) = λ B(λ, n + 1) = Π_{i=1}^{n} i / (λ + i), in closed form. The remaining integrand is
# (1 - G) - (1 - φ), small at both ends, and after t = e^u it is smooth and decays
# exponentially in u on both sides, so the trapezoid rule in u converges geometrically; the
# tests measure 1e-15 at _STEP = 0.25 against exact enumeration.
#
# Truncation. Nodes are added to the right until e^{-λt} (φ(t) + G(t)) < _TAIL_TOL and to the
# left until λ t ((1 - G(t)) + (1 - φ(t))) < _TAIL_TOL for every cut still in play: G and φ
# decrease and 1 - G and 1 - φ increase in t, so these bound the omitted tails of the integral.
#
# All cuts at once. The prefix cuts have nested complements S_m = {sorted tokens m..n-1}, a
# suffix. With w_x = e^{q(x) t} - 1 = π_x / (1 - π_x), the Poisson-binomial law is
# P(N_S = b) = e^{-t q(S)} e_b(w_S), e_b the elementary symmetric polynomial. e_b over a growing
# suffix obeys e_b(S ∪ {x}) = e_b(S) + w_x e_{b-1}(S), so every e_b for every suffix is one
# cumulative sum of non-negative terms: no cancellation, O(k V) per node.
#
# Range. w_x overflows, and e^{-t q(S)} underflows, once some q(x) t is large. A clock with
# q(x) t ≥ _BIG = 50 has rung except with probability e^{-50}; such "big" clocks are counted
# exactly as rung: N_S = (number of big clocks in S) + N_small, which changes G by at most
# k e^{-50} ~ 1e-21. If k or more big clocks lie in S, G = 0 to that accuracy. For the small
# clocks w_x ≤ e^50, e_b ≤ (V e^50)^b / b! stays finite, and when e^{-t q_small(S)} underflows
# every term of P(N_small = b) is below e^{-(745 - 50 b)}, negligible.
#
# Pruning. W(S) ≤ q(S)^k (each successive draw lands in S with probability
# (q(S) - r) / (1 - r) ≤ q(S), r the mass already drawn, all of it from S) and
# W(S) ≥ Π_{j<k} (q(S) - T_j)^+ / (1 - T_j) with T_j the mass of the j largest tokens of q, an
# upper bound on r (the factor decreases in r). Both are evaluated from directly summed small
# masses, 1 - T_j = (mass outside the top j) and q(S) - T_j = (1 - T_j) - λ, never as 1 - (a sum
# close to 1). A prefix whose lower bound on (1) exceeds the best upper bound cannot be the
# minimum and is not integrated.
#
# Dropping negligible draft tokens. Setting q to 0 on a set of total mass δ (and renormalising)
# changes nothing but the clocks of those tokens, so the draft sets under q and under the new q'
# coincide unless a dropped token is among the first k draws under q. Draw j lands on a dropped
# token with probability at most δ / (1 - T_{j-1}), T_j the j largest masses of q, so the draft
# sets differ with probability at most k δ / (1 - T_{k-1}); composing couplings, the optimal
# acceptance moves by at most that much. The smallest draft masses are dropped while this bound
# stays ≤ _TRUNC_TOL = 1e-13; it never drops below k tokens of support (that would need
# δ ≥ 1 - T_{k-1}). For peaked q this removes most of the vocabulary from the sums.
#
# For k = 2 there is a closed form: W(S) = Σ_{x ∈ S} q(x) (q(S) - q(x)) / (1 - q(x)), which is
# q(S) - λ Σ_{x ∈ S} q(x) / (1 - q(x)) after writing q(S) - q(x) = (1 - q(x)) - λ: a suffix sum.
#
# Precision: probabilities without replacement involve the mass left after some draws, which
# can be tiny (a draft token of mass 1 - 1e-10). Everything here is computed from directly summed
# masses (λ, suffix sums, tails of the sorted q) or from the individual clock rates, never as
# 1 - (a sum close to 1), which would lose all relative precision in such cases.


def _drop_negligible_drafts(q: np.ndarray, k: int) -> np.ndarray:
    """Zero the smallest draft masses while k δ / (1 - T_{k-1}) ≤ _TRUNC_TOL (see above)."""
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


def _wor_cut_values(p: np.ndarray, q: np.ndarray, ks: Sequence[int]) -> dict[int, float]:
    """Optimal acceptance without replacement for several k via sorted prefixes (any V)."""
    p, q = _drop_null_tokens(p, q)
    q = _drop_negligible_drafts(q, max(ks))
    n_support = int(np.count_nonzero(q > 0))
    order = _ratio_order(p, q)
    ps, qs = p[order], q[order]
    p_h = np.concatenate(([0.0], np.cumsum(ps)))  # p(H_m), m = 0..n
    lam = np.concatenate(([0.0], np.cumsum(qs)))  # q(H_m)
    q_s = np.concatenate((np.cumsum(qs[::-1])[::-1], [0.0]))  # q(S_m)
    n_s = np.concatenate((np.cumsum((qs > 0)[::-1])[::-1], [0]))  # |S_m ∩ supp q|
    out: dict[int, float] = {}
    integral: dict[int, np.ndarray] = {}
    for k in sorted(set(ks)):
        if k >= n_support:
            # The draft set is the whole support, deterministically: (1) gives p(supp q).
            out[k] = float(np.clip(ps[qs > 0].sum(), 0.0, 1.0))
            continue
        if k == 1:
            stay = q_s.copy()
        elif k == 2:
            others = 1.0 - qs  # exact to relative 2^-53 while q(x) ≤ 1/2 ...
            i_top = int(np.argmax(qs))
            if qs[i_top] > 0.5:  # ... and for the one token above 1/2, summed directly
                others[i_top] = float(np.sum(np.delete(qs, i_top)))
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.where(others > 0, qs / others, 0.0)
            a = np.concatenate((np.cumsum(ratio[::-1])[::-1], [0.0]))
            stay = np.clip(q_s - lam * a, 0.0, 1.0)
        else:
            integral[k] = np.empty(0)
            continue
        stay[n_s < k] = 0.0
        stay[lam == 0] = 1.0
        out[k] = float(np.clip(np.min((1.0 - p_h) + (1.0 - stay)), 0.0, 1.0))
    if integral:
        out.update(_wor_integral_min_cut(ps, qs, p_h, lam, q_s, n_s, sorted(integral)))
    return out


def _wor_integral_min_cut(
    ps: np.ndarray,
    qs: np.ndarray,
    p_h: np.ndarray,
    lam: np.ndarray,
    q_s: np.ndarray,
    n_s: np.ndarray,
    ks: list[int],
) -> dict[int, float]:
    n = ps.size
    kmax = max(ks)
    # tail[j] = 1 - T_j, the mass outside the j largest draft tokens, summed directly: writing it
    # as 1 - T_j would lose all relative precision when that mass is tiny (see "Pruning").
    desc = np.sort(qs)[::-1]
    tail = np.concatenate((np.cumsum(desc[::-1])[::-1], [0.0]))[: kmax + 1]
    trivial_cut = np.where(lam == 0, 1.0 - p_h, 2.0 - p_h)  # W = 1 (λ = 0) or W = 0 (|S| < k)
    cand: dict[int, np.ndarray] = {}
    best_hi: dict[int, float] = {}
    for k in ks:
        live = (lam > 0) & (n_s >= k)
        lower_w = np.ones(n + 1)
        for j in range(k):
            # (q(S) - T_j)^+ / (1 - T_j) = (tail_j - λ)^+ / tail_j, from accurate small terms.
            lower_w *= np.clip(tail[j] - lam, 0.0, None) / max(tail[j], 1e-300)
        cut_hi = np.where(live, (1.0 - p_h) + (1.0 - lower_w), trivial_cut)
        cut_lo = np.where(live, (1.0 - p_h) + (1.0 - q_s**k), trivial_cut)
        best_hi[k] = float(min(cut_hi.min(), 1.0))
        cand[k] = np.flatnonzero(live & (cut_lo <= best_hi[k] + 1e-12))
    union = np.unique(np.concatenate([cand[k] for k in ks]))
    out = {k: min(best_hi[k], float(np.min(trivial_cut[(lam == 0) | (n_s < k)], initial=1.0))) for k in ks}
    if union.size == 0:
        return {k: float(np.clip(v, 0.0, 1.0)) for k, v in out.items()}
    member = {k: np.isin(union, cand[k]) for k in ks}

    # Work in reversed token order so that the suffix S_m is the first s = n - m tokens.
    rq = np.ascontiguousarray(qs[::-1])
    r_cum = np.concatenate(([0.0], np.cumsum(rq)))
    s_all = n - union
    lam_all = lam[union]
    cut_base = 1.0 - p_h[union]
    q_max = float(qs.max())
    esym = np.zeros((kmax, n + 1))  # esym[b, s] = e_b(w over the first s reversed tokens)
    esym[0] = 1.0
    tmp = np.empty(n)
    acc = {k: np.zeros(union.size) for k in ks}
    j_closed = np.ones(union.size)
    for i in range(1, _PHI_POWER + 1):
        j_closed *= i / (lam_all + i)

    def node(u: float, cols: np.ndarray) -> tuple[float, float, dict[int, np.ndarray], np.ndarray]:
        """Add the trapezoid node at u for the cuts `cols`; return t, φ, G per k, e^{-λt}."""
        t = math.exp(u)
        s_idx = s_all[cols]
        lam_c = lam_all[cols]
        top_s = int(s_idx.max())  # only suffixes up to the longest live one are needed
        x = rq[:top_s] * t
        if t * q_max >= _BIG:
            big = x >= _BIG
            w = np.expm1(np.where(big, 0.0, x))
            n_big = np.concatenate(([0], np.cumsum(big)))[s_idx]
            q_small = np.concatenate(([0.0], np.cumsum(np.where(big, 0.0, rq[:top_s]))))[s_idx]
        else:
            w = np.expm1(x)
            n_big = np.zeros(cols.size, dtype=np.int64)
            q_small = r_cum[s_idx]
        for b in range(1, kmax):
            np.multiply(w, esym[b - 1, :top_s], out=tmp[:top_s])
            np.cumsum(tmp[:top_s], out=esym[b, 1: top_s + 1])
        partial = np.cumsum(esym[:, s_idx], axis=0)  # Σ_{b ≤ j} e_b, j = 0..kmax-1
        scale = np.exp(-t * q_small)
        phi = 1.0 - (-math.expm1(-t)) ** _PHI_POWER
        decay = np.exp(-lam_c * t)
        weight = _STEP * lam_c * t * decay
        g_by_k = {}
        picks = np.arange(cols.size)
        for k in ks:
            j = k - 1 - n_big
            g = np.where(j >= 0, scale * partial[np.clip(j, 0, kmax - 1), picks], 0.0)
            g = np.minimum(g, 1.0)
            acc[k][cols] += weight * (phi - g)
            g_by_k[k] = g
        return t, phi, g_by_k, decay

    alive = {k: member[k].copy() for k in ks}

    def live_cols() -> np.ndarray:
        return np.flatnonzero(np.logical_or.reduce([alive[k] for k in ks]))

    # Left tail first (u < 0), until λ t ((1 - G) + (1 - φ)) < _TAIL_TOL for every live cut.
    u = -_STEP
    while True:
        cols = live_cols()
        t, phi, g, _ = node(u, cols)
        lam_c = lam_all[cols]
        err = max(float(np.max((lam_c * t * ((1.0 - g[k]) + (1.0 - phi)))[alive[k][cols]], initial=0.0)) for k in ks)
        if err < _TAIL_TOL:
            break
        if u <= _U_LIMITS[0]:
            warnings.warn("optimal_acceptance: quadrature range limit reached (left)", RuntimeWarning, stacklevel=4)
            break
        u -= _STEP
    # Right part (u ≥ 0). After the node at t the rest of the integral of λ e^{-λt} (φ - G) lies
    # in [-e^{-λt} G(t), e^{-λt} φ(t)] (both integrands are non-negative and decreasing), which
    # brackets every cut; a cut whose lower end exceeds the best upper end cannot be the minimum
    # and stops being integrated. φ dies double-exponentially, so lower ends tighten early.
    # Stop once every live cut's remainder is below _TAIL_TOL.
    prune_hi = dict(best_hi)
    margin = 2.0 * _TAIL_TOL + 1e-12  # left tail + quadrature error
    u = 0.0
    while True:
        cols = live_cols()
        if cols.size == 0:
            break
        t, phi, g, decay = node(u, cols)
        converged = True
        for k in ks:
            sel = alive[k][cols]
            if not sel.any():
                continue
            cut_mid = cut_base[cols] + (1.0 - (j_closed[cols] + acc[k][cols]))
            cut_lo = cut_mid - decay * phi - margin
            cut_hi = cut_mid + decay * g[k] + margin
            prune_hi[k] = min(prune_hi[k], float(np.min(cut_hi[sel])))
            drop = sel & (cut_lo > prune_hi[k] + 1e-12)
            alive[k][cols[drop]] = False
            if np.any((decay * (phi + g[k]) >= _TAIL_TOL) & sel & ~drop):
                converged = False
        if converged:
            break
        if u >= _U_LIMITS[1]:
            warnings.warn("optimal_acceptance: quadrature range limit reached (right)", RuntimeWarning, stacklevel=4)
            break
        u += _STEP

    for k in ks:
        keep = alive[k]
        stay = np.clip(j_closed[keep] + acc[k][keep], 0.0, 1.0)
        out[k] = min(out[k], float(np.min(cut_base[keep] + (1.0 - stay), initial=1.0)))
    return {k: float(np.clip(v, 0.0, 1.0)) for k, v in out.items()}


def _optimal_wor_many(p: np.ndarray, q: np.ndarray, ks: Sequence[int]) -> dict[int, float]:
    pp, qq = _drop_null_tokens(p, q)
    if pp.size <= EXACT_WOR_MAX_V:
        return {k: _optimal_wor_exact(pp, qq, k) for k in ks}
    return _wor_cut_values(pp, qq, ks)


def optimal_acceptance(p: Sequence[float] | np.ndarray, q: Sequence[float] | np.ndarray, k: int,
                       replacement: bool = True) -> float:
    """Best acceptance rate of any lossless verifier for k drafts sampled from q.

    ``replacement=True``: the k drafts are i.i.d. from q; ``replacement=False``: they are drawn
    without replacement (each draw from q restricted to the tokens not drawn yet, renormalised;
    when q has fewer than k tokens of positive mass the draft set is that whole support).

    The value is the minimum cut (1) over token sets H: p(Σ \\ H) + P(the drafts hit H).
    With replacement it is exact, minimised over prefixes of the tokens sorted by decreasing
    p/q (optimal by the exchange argument in the comments), in O(V log V). Without replacement
    it is exact (all 2^V cuts) for V ≤ EXACT_WOR_MAX_V after dropping tokens with p = q = 0,
    and otherwise minimised over the same sorted prefixes with P(all k draws avoid H) from the
    exponential-clock integral (2): quadrature error ~1e-12 (the tests require 1e-10 against
    exact enumeration), plus at most 1e-13 from ignoring draft tokens too rare to matter.
    """
    pa, qa, k = _validate(p, q, k)
    if replacement:
        return _optimal_iid(pa, qa, k)
    return _optimal_wor_many(pa, qa, [k])[k]


# --------------------------------------------------------------------------------------------
# Greedy drafts (Hu et al., Section 5)
# --------------------------------------------------------------------------------------------
#
# The draft set is T ∪ {x}: T = the k - 1 tokens of largest q (ties by index), fixed, and x
# sampled from q restricted to R = Σ \ T and renormalised, q'(x) = q(x) / q(R), so the last
# draft never repeats a fixed one. In (1), a cut H meeting T is hit surely and costs ≥ 1; a cut
# H ⊆ R costs p(Σ \ H) + q'(H). Hence α* = 1 - max_{H ⊆ R} (p(H) - q'(H)) =
# p(T) + Σ_{x ∈ R} min(p(x), q'(x)). It is reached by: sample x ~ q', emit x with probability
# min(1, p(x) / q'(x)), otherwise emit a token from (p - min(p, q'))^+ renormalised, a law that
# puts all of p(T) on T (q' vanishes there): lossless, accepting on Σ min(p, q') + p(T).
# If q(R) = 0 (q has at most k - 1 tokens) there is nothing left to sample and the set is T.


def greedy_draft_acceptance(p: Sequence[float] | np.ndarray, q: Sequence[float] | np.ndarray, k: int) -> float:
    """Optimal acceptance for greedy drafts: top k-1 tokens of q fixed, the k-th sampled.

    The last draft is sampled from q restricted to the tokens outside the fixed k-1 and
    renormalised. Exact: p(T) + Σ_{x ∉ T} min(p(x), q(x) / q(Σ \\ T)); k = 1 gives 1 - TV(p, q).
    """
    pa, qa, k = _validate(p, q, k)
    order = np.argsort(-qa, kind="stable")
    fixed, rest = order[: k - 1], order[k - 1:]
    q_rest = float(qa[rest].sum())
    value = float(pa[fixed].sum())
    if q_rest > 0:
        value += float(np.minimum(pa[rest], qa[rest] / q_rest).sum())
    return float(np.clip(value, 0.0, 1.0))


# --------------------------------------------------------------------------------------------
# Recursive rejection sampling (RRS)
# --------------------------------------------------------------------------------------------
#
# RRS (SpecInfer; Yang et al. and Jeon et al. for drafts without replacement) keeps a residual
# target r, starting at r_0 = p. Round i looks at draft x_i, whose law given the past is q_i
# (q itself for i.i.d. drafts; q with the earlier drafts removed and renormalised without
# replacement). It accepts x_i with probability min(1, r_{i-1}(x_i) / q_i(x_i)); otherwise
# r_i = (r_{i-1} - q_i)^+ / (1 - β_i), β_i = Σ_x min(r_{i-1}(x), q_i(x)). If all rounds reject,
# a token is sampled from r_k. Each round is single-draft speculative sampling of r_{i-1} with
# proposal q_i, so given any history the emitted token has law r_{i-1}: the verifier is
# lossless, accepting in round i with probability β_i given the history.
#
# Residuals are thresholds. Claim: r_i = (p - a_i q)^+ / Z(a_i) with Z(a) = Σ_x (p(x) - a q(x))^+,
# a_0 = 0 and a_i = a_{i-1} + Z(a_{i-1}) / (1 - s_{i-1}), s the q-mass of the drafts already
# rejected (s = 0 with replacement). Induction: every rejected draft y has r(y) < q_i(y), so
# r_i(y) = 0, i.e. p(y) ≤ a_i q(y), and a only grows, so removed tokens carry no residual; on the
# others ((p - a q)^+ / Z - q / (1 - s))^+ = (p - (a + Z / (1 - s)) q)^+ / Z. The normaliser is
# Z(a_i) because it is the sum of the numerator. Consequently Π_{i ≤ j} (1 - β_i) = Z(a_j):
# with replacement the rate is 1 - Z(a_k), exact in O(k V). Without replacement a_i depends on
# the masses of the rejected drafts, and the probability of rejecting round i with token y is
# (q_i(y) - r_{i-1}(y))^+ = q(y) ψ(ρ(y)) with ψ(ρ) = (1 / (1 - s) - (ρ - a) / Z)^+ for ρ > a and
# 1 / (1 - s) below a (for non-removed y), whose total is 1 - β_i = Z(a_i) / Z(a_{i-1}).


def _rrs_iid(p: np.ndarray, q: np.ndarray, k: int) -> float:
    a, z = 0.0, 1.0
    for _ in range(k):
        if z <= 0.0:
            break
        a += z
        z = float(np.clip(p - a * q, 0.0, None).sum())
    return float(np.clip(1.0 - z, 0.0, 1.0))


def _rrs_wor_exact(p: np.ndarray, q: np.ndarray, kmax: int) -> np.ndarray:
    """P(rounds 1..j all reject), j = 0..kmax, by enumerating every rejection history."""
    support = q > 0

    def rec(a: float, removed: np.ndarray, depth: int) -> np.ndarray:
        out = np.ones(depth + 1)
        live = support & ~removed
        if depth == 0 or not live.any():
            return out  # no drafts left: no later round can accept
        z = float(np.clip(p - a * q, 0.0, None).sum())
        if z <= 0.0:
            out[1:] = 0.0
            return out
        remaining = math.fsum(q[live])
        a_next = a + z / remaining
        resid = np.clip(p - a * q, 0.0, None) / z
        reject = np.where(live, np.clip(q / remaining - resid, 0.0, None), 0.0)
        out[1:] = 0.0
        if depth == 1:  # the last round: only the total rejection probability matters
            out[1] = float(reject.sum())
            return out
        for y in np.flatnonzero(reject > 0):
            gone = removed.copy()
            gone[y] = True
            out[1:] += reject[y] * rec(a_next, gone, depth - 1)[: depth]
        return out

    return rec(0.0, np.zeros(p.size, dtype=bool), kmax)


def _rrs_wor_is_exact(q: np.ndarray, kmax: int) -> bool:
    """Whether the enumeration (history-tree leaves times V) fits RRS_EXACT_MAX_WORK."""
    n = int(np.count_nonzero(q > 0))
    work = q.size
    for i in range(min(kmax, n) - 1):
        work *= n - i
        if work > RRS_EXACT_MAX_WORK:
            return False
    return True


def _rejected_mass_before(j: np.ndarray, cq: np.ndarray, cp: np.ndarray, q_s: np.ndarray, ia: np.ndarray,
                          ib: np.ndarray, a: np.ndarray, z: np.ndarray, remaining: np.ndarray,
                          removed: np.ndarray) -> np.ndarray:
    """Per path, the rejection probability carried by the sorted positions < j (see above).

    Positions are sorted by increasing p/q. Below ia (ρ ≤ a) the weight is q / (1 - s); between
    ia and ib (a < ρ < a_next) it is q / (1 - s) - (p - a q) / Z; from ib on it is 0. Removed
    tokens (all below ia) are taken out. ``removed`` holds sorted positions, -1 for none yet.
    """
    jj = np.minimum(j, ib)
    flat = cq[np.minimum(jj, ia)] / remaining
    lin = np.where(jj > ia, (cq[jj] - cq[ia]) * (1.0 / remaining + a / z) - (cp[jj] - cp[ia]) / z, 0.0)
    gone = np.where((removed >= 0) & (removed < jj[:, None]), q_s[np.maximum(removed, 0)], 0.0).sum(axis=1)
    return flat + lin - gone / remaining


def _rrs_wor_mc(p: np.ndarray, q: np.ndarray, kmax: int, n_paths: int,
                rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Rao-Blackwellised Monte Carlo of P(rounds 1..j all reject), j = 0..kmax.

    Each path draws the rejected tokens y_1, y_2, ... from their law given rejection and
    carries the product of the exact rejection probabilities Π (1 - β_i), whose expectation is
    the probability that all rounds reject. Returns (means, standard errors).
    """
    sup = np.flatnonzero(q > 0)
    p_free = float(p[q == 0].sum())  # tokens never drafted keep their residual forever
    rho = p[sup] / q[sup]
    order = np.argsort(rho, kind="stable")
    rho_s, q_s, p_s = rho[order], q[sup][order], p[sup][order]
    cq = np.concatenate(([0.0], np.cumsum(q_s)))
    cp = np.concatenate(([0.0], np.cumsum(p_s)))
    n = rho_s.size
    k_eff = min(kmax, n)

    def z_of(a: np.ndarray) -> np.ndarray:  # Z(a) = Σ (p - a q)^+
        idx = np.searchsorted(rho_s, a, side="right")
        return np.clip(p_free + (cp[n] - cp[idx]) - a * (cq[n] - cq[idx]), 0.0, None)

    a = np.zeros(n_paths)
    z = np.ones(n_paths)
    removed = np.full((n_paths, max(k_eff - 1, 1)), -1, dtype=np.int64)
    removed_q = np.zeros(n_paths)
    weight = np.ones(n_paths)
    means = np.ones(kmax + 1)
    errs = np.zeros(kmax + 1)
    for i in range(1, kmax + 1):
        if i > k_eff:  # support exhausted: no more rounds
            means[i], errs[i] = means[i - 1], errs[i - 1]
            continue
        # Mass not drafted yet. (Written as total minus drafted, it keeps ~1e-16 absolute
        # precision only; fine for an estimate whose standard error is ~1e-4.)
        remaining = np.maximum(cq[n] - removed_q, 1e-300)
        a_next = a + z / remaining
        z_next = z_of(a_next)
        ok = z > 0
        frac = np.where(ok, z_next / np.where(ok, z, 1.0), 0.0)
        weight = weight * np.clip(frac, 0.0, 1.0)
        means[i] = weight.mean()
        errs[i] = weight.std(ddof=1) / math.sqrt(n_paths) if n_paths > 1 else 0.0
        if i == k_eff:
            continue
        # Sample the rejected token: cumulative rejection weight M(j) over sorted positions < j.
        ia = np.searchsorted(rho_s, a, side="right")
        ib = np.searchsorted(rho_s, a_next, side="left")
        zs = np.where(ok, z, 1.0)
        sampler = (cq, cp, q_s, ia, ib, a, zs, remaining, removed)
        total = _rejected_mass_before(ib, *sampler)
        target = rng.random(n_paths) * total
        lo = np.zeros(n_paths, dtype=np.int64)
        hi = ib.astype(np.int64).copy()
        while np.any(hi - lo > 1):
            mid = (lo + hi) // 2
            above = _rejected_mass_before(mid, *sampler) > target
            hi = np.where(above, mid, hi)
            lo = np.where(above, lo, mid)
        pick = lo
        removed[:, i - 1] = np.where(ok, pick, -1)
        removed_q = removed_q + np.where(ok, q_s[pick], 0.0)
        a, z = a_next, z_next
    return means, errs


def _rrs_wor_all(p: np.ndarray, q: np.ndarray, kmax: int, n_paths: int,
                 seed: int) -> tuple[np.ndarray, np.ndarray]:
    if _rrs_wor_is_exact(q, kmax):
        return _rrs_wor_exact(p, q, kmax), np.zeros(kmax + 1)
    return _rrs_wor_mc(p, q, kmax, n_paths, np.random.default_rng(seed))


def rrs_wor_estimate(p: Sequence[float] | np.ndarray, q: Sequence[float] | np.ndarray, k: int,
                     n_paths: int = RRS_MC_PATHS, seed: int = RRS_MC_SEED) -> tuple[float, float]:
    """RRS acceptance without replacement and its standard error (0.0 when exact).

    Exact enumeration of every rejection history when that costs at most RRS_EXACT_MAX_WORK
    (leaves of the history tree times V); otherwise a seeded Monte Carlo over ``n_paths``
    histories that averages the exact product of rejection probabilities along each
    (Rao-Blackwellised, so the error is usually ~1e-4 or less at the default 20,000 paths).
    """
    pa, qa, k = _validate(p, q, k)
    if n_paths < 2:
        raise ValueError("n_paths must be at least 2")
    means, errs = _rrs_wor_all(pa, qa, k, n_paths, seed)
    return float(np.clip(1.0 - means[k], 0.0, 1.0)), float(errs[k])


def rrs_acceptance(p: Sequence[float] | np.ndarray, q: Sequence[float] | np.ndarray, k: int,
                   replacement: bool = True) -> float:
    """Acceptance rate of recursive rejection sampling with k drafts.

    With replacement (i.i.d. drafts) it is exact: 1 - Z(a_k) with the threshold recursion in
    the comments, O(k V). Without replacement (drafts drawn without replacement, each round's
    draft law renormalised after removing the earlier, rejected drafts) it is exact by
    enumeration for small trees and otherwise the deterministic (seed RRS_MC_SEED) Monte Carlo
    estimate of ``rrs_wor_estimate``; call that function for the standard error.
    """
    pa, qa, k = _validate(p, q, k)
    if replacement:
        return _rrs_iid(pa, qa, k)
    means, _ = _rrs_wor_all(pa, qa, k, RRS_MC_PATHS, RRS_MC_SEED)
    return float(np.clip(1.0 - means[k], 0.0, 1.0))


# --------------------------------------------------------------------------------------------
# K-SEQ (SpecTr, Sun et al. 2023)
# --------------------------------------------------------------------------------------------
#
# K-SEQ takes i.i.d. drafts x_1..x_k ~ q and a scaling ρ ≥ 1. It accepts the first x_i that
# passes a coin with probability min(1, p(x_i) / (ρ q(x_i))); each draft passes with
# probability β(ρ) = Σ_x min(q(x), p(x) / ρ), so some draft is accepted with probability
# 1 - (1 - β)^k and the accepted token has law min(q, p / ρ) (1 - (1 - β)^k) / β. If none
# passes it samples the residual p_res ∝ p - min(q, p / ρ) (1 - (1 - β)^k) / β. That is a
# distribution (lossless) iff it is non-negative, i.e. iff 1 - (1 - β(ρ))^k ≤ ρ β(ρ). Because
# ρ β(ρ) = Σ min(ρ q, p) increases and β decreases in ρ, h(ρ) = ρ β - 1 + (1 - β)^k is
# non-decreasing, h(1) = -(1 - β)(1 - (1 - β)^{k-1}) ≤ 0 and h(k) ≥ 0 (Bernoulli). SpecTr
# uses the smallest feasible ρ*, the root of 1 - (1 - β)^k = ρ β, which maximises the rate
# 1 - (1 - β(ρ*))^k over feasible ρ; we find it by bisection and report the rate at the
# feasible end of the final bracket. k = 1 gives ρ* = 1 and 1 - TV(p, q).


def _kseq_beta_fn(p: np.ndarray, q: np.ndarray) -> Callable[[float], float]:
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
    pa, qa, k = _validate(p, q, k)
    return _kseq_rho(pa, qa, k)


def kseq_acceptance(p: Sequence[float] | np.ndarray, q: Sequence[float] | np.ndarray, k: int) -> float:
    """Exact K-SEQ acceptance rate 1 - (1 - β(ρ*))^k with SpecTr's ρ* (``kseq_scaling``)."""
    pa, qa, k = _validate(p, q, k)
    rho = _kseq_rho(pa, qa, k)
    b = _kseq_beta_fn(pa, qa)(rho)
    return float(np.clip(1.0 - (1.0 - b) ** k, 0.0, 1.0))


# --------------------------------------------------------------------------------------------
# Deterministic top-k set
# --------------------------------------------------------------------------------------------


def topk_set_acceptance(p: Sequence[float] | np.ndarray, q: Sequence[float] | np.ndarray, k: int) -> float:
    """Acceptance of a fixed set T of the k most likely draft tokens (ties by index): p(T).

    This project verifies a node's children by letting the target sample its own token Y ~ p
    and accepting the child equal to Y, if any; so the emitted token is exactly p-distributed
    and a draft is accepted iff Y ∈ T, with probability p(T). No lossless verifier can do
    better for a fixed set: whatever it does, the emitted token Y must have law p, and an
    accepted draft is a token of T equal to Y, so P(accept) ≤ P(Y ∈ T) = p(T). The sampling rule
    meets that bound, so for deterministic drafts the choice of verifier does not matter; only
    the choice of set does (and here it is fixed to the top k of q).
    """
    pa, qa, k = _validate(p, q, k)
    top = np.argsort(-qa, kind="stable")[:k]
    return float(np.clip(pa[top].sum(), 0.0, 1.0))


# --------------------------------------------------------------------------------------------
# Table for the Theory tab, toy inputs
# --------------------------------------------------------------------------------------------

SCHEMES = ("optimal_iid", "optimal_wor", "greedy_draft", "rrs_iid", "rrs_wor", "kseq", "topk_set")


def scheme_table(p: Sequence[float] | np.ndarray, q: Sequence[float] | np.ndarray,
                 ks: Iterable[int] = range(1, 9)) -> dict[str, list[float]]:
    """Every scheme's acceptance rate for each k, as columns for plotting.

    Returns ``{"k": [...], "optimal_iid": [...], "optimal_wor": [...], "greedy_draft": [...],
    "rrs_iid": [...], "rrs_wor": [...], "rrs_wor_stderr": [...], "kseq": [...], "topk_set": [...]}``
    with one entry per k in ``ks`` (in the given order). ``rrs_wor_stderr`` is 0.0 where the
    RRS value is exact and the Monte Carlo standard error otherwise; all other entries are exact
    (the optimum without replacement up to its ~1e-12 quadrature error at large V).
    """
    ks = [_check_k(k) for k in ks]
    if not ks:
        raise ValueError("ks must contain at least one k")
    pa, qa, _ = _validate(p, q, 1)
    kmax = max(ks)
    wor = _optimal_wor_many(pa, qa, sorted(set(ks)))
    rrs_means, rrs_errs = _rrs_wor_all(pa, qa, kmax, RRS_MC_PATHS, RRS_MC_SEED)
    table: dict[str, list[float]] = {name: [] for name in ("k", *SCHEMES, "rrs_wor_stderr")}
    for k in ks:
        table["k"].append(k)
        table["optimal_iid"].append(_optimal_iid(pa, qa, k))
        table["optimal_wor"].append(wor[k])
        table["greedy_draft"].append(greedy_draft_acceptance(pa, qa, k))
        table["rrs_iid"].append(_rrs_iid(pa, qa, k))
        table["rrs_wor"].append(float(np.clip(1.0 - rrs_means[k], 0.0, 1.0)))
        table["rrs_wor_stderr"].append(float(rrs_errs[k]))
        table["kseq"].append(kseq_acceptance(pa, qa, k))
        table["topk_set"].append(topk_set_acceptance(pa, qa, k))
    return table


def toy_distributions(kind: str = "peaked", V: int = 32, seed: int = 0, *, scale: float | None = None,
                      draft_scale: float | None = None,
                      noise: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """A target/draft pair for the toy mode, deterministic in (kind, V, seed) and the overrides.

    The target is softmax(s z) with z standard normal; the draft is softmax(s' (z + σ ε)), a noisy
    copy, like a small model that mostly agrees with the big one. ``"peaked"`` uses s = s' = 3,
    σ = 0.6 (a few tokens hold most mass), ``"flat"`` s = s' = 0.7, σ = 0.6 (mass spread out), and
    ``"mismatched"`` draws p and q from independent Dirichlet(0.3) laws. For the two softmax kinds
    ``scale`` (s, the target's peakedness), ``draft_scale`` (s', the draft's; default s) and
    ``noise`` (σ, the mismatch) override the kind's values; they must be finite and >= 0.
    """
    if isinstance(V, bool) or not isinstance(V, (int, np.integer)) or V < 2:
        raise ValueError(f"V must be an integer >= 2, got {V!r}")
    rng = np.random.default_rng(seed)
    overrides = {"scale": scale, "draft_scale": draft_scale, "noise": noise}
    for name, value in overrides.items():
        if value is not None and not (isinstance(value, (int, float, np.floating)) and math.isfinite(value)
                                      and value >= 0):
            raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    if kind == "mismatched":
        if any(v is not None for v in overrides.values()):
            raise ValueError("scale, draft_scale and noise apply to the 'peaked' and 'flat' kinds only")
        p = rng.dirichlet(np.full(V, 0.3))
        q = rng.dirichlet(np.full(V, 0.3))
        return p / p.sum(), q / q.sum()
    settings = {"peaked": (3.0, 0.6), "flat": (0.7, 0.6)}
    if kind not in settings:
        raise ValueError(f"kind must be one of 'peaked', 'flat', 'mismatched', got {kind!r}")
    s, sigma = settings[kind]
    s = s if scale is None else float(scale)
    s_draft = s if draft_scale is None else float(draft_scale)
    sigma = sigma if noise is None else float(noise)
    z = rng.standard_normal(V)
    eps = rng.standard_normal(V)

    def softmax(v: np.ndarray) -> np.ndarray:
        e = np.exp(v - v.max())
        return e / e.sum()

    return softmax(s * z), softmax(s_draft * (z + sigma * eps))


def wor_beats_iid_example() -> tuple[np.ndarray, np.ndarray]:
    """A fixed (p, q) where drafting without replacement clearly beats i.i.d. drafting.

    The draft is confidently wrong: it puts 0.75 on token 3, which the target gives only 0.1.
    Two i.i.d. drafts are both token 3 with probability 0.5625, so the second draft is often
    wasted; without replacement the second draft is always a different token. At k = 2 the
    optimal acceptance is 0.5375 with i.i.d. drafts and about 0.916 without replacement (both
    equal 1 - TV = 0.35 at k = 1).
    """
    p = np.array([0.5, 0.3, 0.1, 0.1])
    q = np.array([0.1, 0.1, 0.05, 0.75])
    return p, q
