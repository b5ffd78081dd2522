"""Recursive rejection sampling (RRS; SpecInfer, and without replacement Yang et al., Jeon et al.).

Its residual after each rejected round is a threshold of p (docs/theory.md#recursive-rejection-sampling),
so with i.i.d. drafts the rate is exact in O(k V). Without replacement it depends on which drafts
were rejected: exact by enumerating every rejection history when that is small enough, and
otherwise a seeded, Rao-Blackwellised Monte Carlo with a standard error
(docs/theory.md#rrs-without-replacement).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from opttree.theory.distributions import validate

# Recursive rejection sampling without replacement is enumerated exactly when its history tree
# (leaves times vocabulary size, the cost of the enumeration) is at most this large, and
# estimated by Monte Carlo otherwise.
RRS_EXACT_MAX_WORK = 2_000_000
RRS_MC_PATHS = 20000
RRS_MC_SEED = 0


def rrs_iid(p: np.ndarray, q: np.ndarray, k: int) -> float:
    """RRS acceptance with i.i.d. drafts of validated p, q: 1 - Z(a_k)."""
    a, z = 0.0, 1.0
    for _ in range(k):
        if z <= 0.0:
            break
        a += z
        z = float(np.clip(p - a * q, 0.0, None).sum())
    return float(np.clip(1.0 - z, 0.0, 1.0))


def rrs_wor_exact(p: np.ndarray, q: np.ndarray, kmax: int) -> np.ndarray:
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


def rrs_wor_is_exact(q: np.ndarray, kmax: int) -> bool:
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
    """Per path, the rejection probability carried by the sorted positions < j.

    Positions are sorted by increasing p/q. Below ia (ρ ≤ a) the weight is q / (1 - s); between
    ia and ib (a < ρ < a_next) it is q / (1 - s) - (p - a q) / Z; from ib on it is 0. Removed
    tokens (all below ia) are taken out. ``removed`` holds sorted positions, -1 for none yet.
    """
    jj = np.minimum(j, ib)
    flat = cq[np.minimum(jj, ia)] / remaining
    lin = np.where(jj > ia, (cq[jj] - cq[ia]) * (1.0 / remaining + a / z) - (cp[jj] - cp[ia]) / z, 0.0)
    gone = np.where((removed >= 0) & (removed < jj[:, None]), q_s[np.maximum(removed, 0)], 0.0).sum(axis=1)
    return flat + lin - gone / remaining


def _sample_rejected(sampler: tuple, ib: np.ndarray, n_paths: int, rng: np.random.Generator) -> np.ndarray:
    """Per path, the sorted position of the rejected token, drawn by inverting the cumulative
    rejection weight `_rejected_mass_before` (``sampler`` holds its arguments after j)."""
    total = _rejected_mass_before(ib, *sampler)
    target = rng.random(n_paths) * total
    lo = np.zeros(n_paths, dtype=np.int64)
    hi = ib.astype(np.int64).copy()
    while np.any(hi - lo > 1):
        mid = (lo + hi) // 2
        above = _rejected_mass_before(mid, *sampler) > target
        hi = np.where(above, mid, hi)
        lo = np.where(above, lo, mid)
    return lo


def rrs_wor_mc(p: np.ndarray, q: np.ndarray, kmax: int, n_paths: int,
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
        ia = np.searchsorted(rho_s, a, side="right")
        ib = np.searchsorted(rho_s, a_next, side="left")
        sampler = (cq, cp, q_s, ia, ib, a, np.where(ok, z, 1.0), remaining, removed)
        pick = _sample_rejected(sampler, ib, n_paths, rng)
        removed[:, i - 1] = np.where(ok, pick, -1)
        removed_q = removed_q + np.where(ok, q_s[pick], 0.0)
        a, z = a_next, z_next
    return means, errs


def rrs_wor_all(p: np.ndarray, q: np.ndarray, kmax: int, n_paths: int,
                seed: int) -> tuple[np.ndarray, np.ndarray]:
    """P(rounds 1..j all reject) without replacement for j = 0..kmax and its standard errors
    (zeros when exact): enumeration when it fits RRS_EXACT_MAX_WORK, else Monte Carlo."""
    if rrs_wor_is_exact(q, kmax):
        return rrs_wor_exact(p, q, kmax), np.zeros(kmax + 1)
    return rrs_wor_mc(p, q, kmax, n_paths, np.random.default_rng(seed))


def rrs_wor_estimate(p: Sequence[float] | np.ndarray, q: Sequence[float] | np.ndarray, k: int,
                     n_paths: int = RRS_MC_PATHS, seed: int = RRS_MC_SEED) -> tuple[float, float]:
    """RRS acceptance without replacement and its standard error (0.0 when exact).

    Exact enumeration of every rejection history when that costs at most RRS_EXACT_MAX_WORK
    (leaves of the history tree times V); otherwise a seeded Monte Carlo over ``n_paths``
    histories that averages the exact product of rejection probabilities along each
    (Rao-Blackwellised, so the error is usually ~1e-4 or less at the default 20,000 paths).
    """
    pa, qa, k = validate(p, q, k)
    if n_paths < 2:
        raise ValueError("n_paths must be at least 2")
    means, errs = rrs_wor_all(pa, qa, k, n_paths, seed)
    return float(np.clip(1.0 - means[k], 0.0, 1.0)), float(errs[k])


def rrs_acceptance(p: Sequence[float] | np.ndarray, q: Sequence[float] | np.ndarray, k: int,
                   replacement: bool = True) -> float:
    """Acceptance rate of recursive rejection sampling with k drafts.

    With replacement (i.i.d. drafts) it is exact: 1 - Z(a_k) with the threshold recursion of
    docs/theory.md#recursive-rejection-sampling, O(k V). Without replacement (drafts drawn without
    replacement, each round's draft law renormalised after removing the earlier, rejected drafts)
    it is exact by enumeration for small trees and otherwise the deterministic (seed RRS_MC_SEED)
    Monte Carlo estimate of ``rrs_wor_estimate``; call that function for the standard error.
    """
    pa, qa, k = validate(p, q, k)
    if replacement:
        return rrs_iid(pa, qa, k)
    means, _ = rrs_wor_all(pa, qa, k, RRS_MC_PATHS, RRS_MC_SEED)
    return float(np.clip(1.0 - means[k], 0.0, 1.0))
