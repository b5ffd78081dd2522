"""Prefix cuts without replacement for k ≥ 3: the exponential-clock integral, all cuts at once.

For a cut H with λ = q(H) and S its complement, W(S) = P(the first k draws all lie in S) is the
integral (2) of docs/theory.md#exponential-clocks, computed by the trapezoid rule in u = log t with
a closed-form part split off (#splitting-the-integral), stopped once the tails are negligible
(#truncation), for every prefix at once through elementary symmetric polynomials
(#all-cuts-at-once) with very likely clocks counted as rung (#range). Cuts that bounds show cannot
be the minimum are never integrated or stop being integrated (#pruning).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

_STEP = 0.25  # trapezoid step in u = log t (1e-15 accuracy in the tests; 0.35 gives ~1e-10)
_TAIL_TOL = 1e-14  # both truncated tails are bounded by this, per cut
_BIG = 50.0  # clocks with rate * t >= _BIG count as surely rung (error e^-50 per clock)
_PHI_POWER = 6  # smoothness of the partition of unity that splits the integral
_U_LIMITS = (-80.0, 160.0)  # hard bounds on u; reached only by pathological inputs
# The warnings name the frame of the public caller: optimal_acceptance or scheme_table (the stack
# from them: optimal_wor_many, wor_cut_values, wor_integral_min_cut, the integration loop).
_WARN_STACKLEVEL = 5


def _bound_cuts(qs: np.ndarray, p_h: np.ndarray, lam: np.ndarray, q_s: np.ndarray, n_s: np.ndarray,
                ks: list[int]) -> tuple[dict[int, np.ndarray], dict[int, float], np.ndarray]:
    """Per k, the prefixes whose lower bound on (1) does not exceed the best upper bound.

    Returns those candidates, the best upper bound per k and the value of every trivial cut
    (λ = 0: W = 1; fewer than k draft tokens in S: W = 0). derivation: docs/theory.md#pruning
    """
    n = qs.size
    kmax = max(ks)
    # tail[j] = 1 - T_j, the mass outside the j largest draft tokens, summed directly: writing it
    # as 1 - T_j would lose all relative precision when that mass is tiny.
    desc = np.sort(qs)[::-1]
    tail = np.concatenate((np.cumsum(desc[::-1])[::-1], [0.0]))[: kmax + 1]
    trivial_cut = np.where(lam == 0, 1.0 - p_h, 2.0 - p_h)
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
    return cand, best_hi, trivial_cut


class _StayQuadrature:
    """Trapezoid sums of W(S) - J(λ) (docs/theory.md#splitting-the-integral) for chosen prefixes.

    ``union`` holds the prefix lengths m integrated for some k; ``alive[k]`` marks, over ``union``,
    those still integrated for k. Tokens are kept in reversed order so that the suffix S_m is the
    first n - m of them.
    """

    def __init__(self, qs: np.ndarray, p_h: np.ndarray, lam: np.ndarray, union: np.ndarray,
                 alive: dict[int, np.ndarray], ks: list[int]):
        n = qs.size
        self.ks = ks
        self.kmax = max(ks)
        self.alive = alive
        self.rq = np.ascontiguousarray(qs[::-1])
        self.r_cum = np.concatenate(([0.0], np.cumsum(self.rq)))
        self.s_all = n - union
        self.lam_all = lam[union]
        self.cut_base = 1.0 - p_h[union]
        self.q_max = float(qs.max())
        self.esym = np.zeros((self.kmax, n + 1))  # esym[b, s] = e_b(w over the first s reversed tokens)
        self.esym[0] = 1.0
        self.tmp = np.empty(n)
        self.acc = {k: np.zeros(union.size) for k in ks}
        self.j_closed = np.ones(union.size)  # J(λ) = Π_{i ≤ n} i / (λ + i)
        for i in range(1, _PHI_POWER + 1):
            self.j_closed *= i / (self.lam_all + i)

    def live_cols(self) -> np.ndarray:
        return np.flatnonzero(np.logical_or.reduce([self.alive[k] for k in self.ks]))

    def _clock_weights(self, t: float, s_idx: np.ndarray,
                       top_s: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """w_x = e^{q(x) t} - 1 over the first top_s reversed tokens (0 for big clocks), the number
        of big clocks in each suffix and each suffix's small-clock mass (docs/theory.md#range)."""
        x = self.rq[:top_s] * t
        if t * self.q_max >= _BIG:
            big = x >= _BIG
            w = np.expm1(np.where(big, 0.0, x))
            n_big = np.concatenate(([0], np.cumsum(big)))[s_idx]
            q_small = np.concatenate(([0.0], np.cumsum(np.where(big, 0.0, self.rq[:top_s]))))[s_idx]
        else:
            w = np.expm1(x)
            n_big = np.zeros(s_idx.size, dtype=np.int64)
            q_small = self.r_cum[s_idx]
        return w, n_big, q_small

    def node(self, u: float, cols: np.ndarray) -> tuple[float, float, dict[int, np.ndarray], np.ndarray]:
        """Add the trapezoid node at u for the cuts `cols`; return t, φ, G per k, e^{-λt}."""
        t = math.exp(u)
        s_idx = self.s_all[cols]
        lam_c = self.lam_all[cols]
        top_s = int(s_idx.max())  # only suffixes up to the longest live one are needed
        w, n_big, q_small = self._clock_weights(t, s_idx, top_s)
        tmp = self.tmp[:top_s]
        for b in range(1, self.kmax):
            np.multiply(w, self.esym[b - 1, :top_s], out=tmp)
            np.cumsum(tmp, out=self.esym[b, 1: top_s + 1])
        partial = np.cumsum(self.esym[:, s_idx], axis=0)  # Σ_{b ≤ j} e_b, j = 0..kmax-1
        scale = np.exp(-t * q_small)
        phi = 1.0 - (-math.expm1(-t)) ** _PHI_POWER
        decay = np.exp(-lam_c * t)
        weight = _STEP * lam_c * t * decay
        g_by_k = {}
        picks = np.arange(cols.size)
        for k in self.ks:
            j = k - 1 - n_big
            g = np.where(j >= 0, scale * partial[np.clip(j, 0, self.kmax - 1), picks], 0.0)
            g = np.minimum(g, 1.0)
            self.acc[k][cols] += weight * (phi - g)
            g_by_k[k] = g
        return t, phi, g_by_k, decay

    def integrate_left(self) -> None:
        """Nodes at u < 0 until λ t ((1 - G) + (1 - φ)) < _TAIL_TOL for every live cut."""
        u = -_STEP
        while True:
            cols = self.live_cols()
            t, phi, g, _ = self.node(u, cols)
            lam_c = self.lam_all[cols]
            err = max(float(np.max((lam_c * t * ((1.0 - g[k]) + (1.0 - phi)))[self.alive[k][cols]], initial=0.0))
                      for k in self.ks)
            if err < _TAIL_TOL:
                return
            if u <= _U_LIMITS[0]:
                warnings.warn("optimal_acceptance: quadrature range limit reached (left)", RuntimeWarning,
                              stacklevel=_WARN_STACKLEVEL)
                return
            u -= _STEP

    def _prune(self, k: int, cols: np.ndarray, phi: float, g: np.ndarray, decay: np.ndarray,
               prune_hi: dict[int, float], margin: float) -> bool:
        """Stop integrating k's cuts that cannot be the minimum; whether k's live cuts have converged."""
        sel = self.alive[k][cols]
        if not sel.any():
            return True
        cut_mid = self.cut_base[cols] + (1.0 - (self.j_closed[cols] + self.acc[k][cols]))
        cut_lo = cut_mid - decay * phi - margin
        cut_hi = cut_mid + decay * g + margin
        prune_hi[k] = min(prune_hi[k], float(np.min(cut_hi[sel])))
        drop = sel & (cut_lo > prune_hi[k] + 1e-12)
        self.alive[k][cols[drop]] = False
        return not np.any((decay * (phi + g) >= _TAIL_TOL) & sel & ~drop)

    def integrate_right(self, best_hi: dict[int, float]) -> None:
        """Nodes at u ≥ 0, pruning as the remainders bracket each cut, until every remainder is
        below _TAIL_TOL (docs/theory.md#pruning)."""
        prune_hi = dict(best_hi)
        margin = 2.0 * _TAIL_TOL + 1e-12  # left tail + quadrature error
        u = 0.0
        while True:
            cols = self.live_cols()
            if cols.size == 0:
                return
            _, phi, g, decay = self.node(u, cols)
            converged = True
            for k in self.ks:
                if not self._prune(k, cols, phi, g[k], decay, prune_hi, margin):
                    converged = False
            if converged:
                return
            if u >= _U_LIMITS[1]:
                warnings.warn("optimal_acceptance: quadrature range limit reached (right)", RuntimeWarning,
                              stacklevel=_WARN_STACKLEVEL)
                return
            u += _STEP

    def best_cut(self, k: int) -> float:
        """The least value of (1) over the cuts still alive for k (1.0 if none)."""
        keep = self.alive[k]
        stay = np.clip(self.j_closed[keep] + self.acc[k][keep], 0.0, 1.0)
        return float(np.min(self.cut_base[keep] + (1.0 - stay), initial=1.0))


def wor_integral_min_cut(qs: np.ndarray, p_h: np.ndarray, lam: np.ndarray, q_s: np.ndarray, n_s: np.ndarray,
                         ks: list[int]) -> dict[int, float]:
    """Minimum of (1) over the prefix cuts for each k in ``ks`` (sorted, each ≥ 3).

    ``qs`` is q sorted by decreasing p/q; ``p_h``, ``lam`` (= q(H_m)), ``q_s`` (= q(S_m)) and ``n_s``
    (= |S_m ∩ supp q|) are indexed by the prefix length m = 0..n.
    """
    cand, best_hi, trivial_cut = _bound_cuts(qs, p_h, lam, q_s, n_s, ks)
    union = np.unique(np.concatenate([cand[k] for k in ks]))
    out = {k: min(best_hi[k], float(np.min(trivial_cut[(lam == 0) | (n_s < k)], initial=1.0))) for k in ks}
    if union.size == 0:
        return {k: float(np.clip(v, 0.0, 1.0)) for k, v in out.items()}
    quad = _StayQuadrature(qs, p_h, lam, union, {k: np.isin(union, cand[k]) for k in ks}, ks)
    quad.integrate_left()
    quad.integrate_right(best_hi)
    for k in ks:
        out[k] = min(out[k], quad.best_cut(k))
    return {k: float(np.clip(v, 0.0, 1.0)) for k, v in out.items()}
