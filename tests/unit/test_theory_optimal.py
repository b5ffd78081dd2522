"""Tests for opttree.theory's optima (optimal.py, wor_prefix.py, wor_integral.py).

The optima are checked against a linear program over couplings (scipy's HiGHS) and against
brute force over all cuts (helpers in theory_coupling.py).
"""

from __future__ import annotations

import numpy as np
import pytest
from theory_coupling import SMALL, greedy_tuples, iid_tuples, lp_optimum, min_cut_brute, wor_tuples

from opttree.theory.distributions import wor_beats_iid_example
from opttree.theory.optimal import optimal_acceptance, optimal_wor_exact
from opttree.theory.rrs import rrs_acceptance
from opttree.theory.verifiers import greedy_draft_acceptance
from opttree.theory.wor_prefix import wor_cut_values

# --------------------------------------------------------------------------------------------
# Optima against the coupling LP
# --------------------------------------------------------------------------------------------


def test_optimal_rates_match_coupling_lp():
    worst = 0.0
    for kind, p, q in SMALL:
        for k in (1, 2, 3):
            cases = [
                (optimal_acceptance(p, q, k), iid_tuples(q, k)),
                (optimal_acceptance(p, q, k, replacement=False), wor_tuples(q, k)),
                (wor_cut_values(p, q, [k])[k], wor_tuples(q, k)),  # sorted-prefix path
                (greedy_draft_acceptance(p, q, k), greedy_tuples(q, k)),
            ]
            for value, (tuples, probs) in cases:
                lp = lp_optimum(tuples, probs, p)
                worst = max(worst, abs(value - lp))
                assert value == pytest.approx(lp, abs=1e-6), (kind, p, q, k)
    assert worst < 1e-6


def test_sorted_prefix_cuts_equal_all_cuts_without_replacement():
    # The large-vocabulary path minimises only over prefixes by decreasing p/q; brute force over
    # all 2^V cuts (1) on many random instances, with ties and zeros, finds nothing lower.
    rng = np.random.default_rng(7)
    for trial in range(400):
        v = int(rng.integers(2, 7))
        k = int(rng.integers(2, 5))
        p = rng.dirichlet(np.full(v, rng.choice([0.1, 0.5, 2.0])))
        q = rng.dirichlet(np.full(v, rng.choice([0.1, 0.5, 2.0])))
        if trial % 3 == 0:
            q[rng.integers(v)] = 0.0
        if trial % 5 == 0:
            p[: v // 2] = q[: v // 2]  # equal ratios on a block
        p, q = p / p.sum(), q / q.sum()
        tuples, probs = wor_tuples(q, k)
        assert wor_cut_values(p, q, [k])[k] == pytest.approx(min_cut_brute(p, tuples, probs), abs=1e-12)


def test_prefix_direction_is_decreasing_ratio():
    # Prefixes of tokens sorted by INCREASING p/q do not reach the optimum in general, while the
    # module (decreasing p/q) does: the direction is a real property, not a convention.
    gaps = []
    for _, p, q in SMALL:
        with np.errstate(divide="ignore", invalid="ignore"):
            rho = np.where(q > 0, p / np.where(q > 0, q, 1), np.inf)
        order = np.argsort(rho, kind="stable")  # increasing
        p_h = np.concatenate(([0.0], np.cumsum(p[order])))
        q_h = np.concatenate(([0.0], np.cumsum(q[order])))
        wrong = np.min((1 - p_h) + 1 - (1 - q_h) ** 2)
        gaps.append(wrong - lp_optimum(*iid_tuples(q, 2), p))
    assert max(gaps) > 0.05
    assert min(gaps) > -1e-9


def test_fast_without_replacement_matches_exact_enumeration():
    # Medium vocabularies (above the module's brute-force limit) exercise the quadrature, its
    # pruning, the k = 2 closed form and the "big clock" branch (a draft token of mass ~1).
    rng = np.random.default_rng(11)
    cases = []
    for alpha in (0.1, 0.5, 3.0):
        for _ in range(3):
            v = int(rng.integers(11, 13))
            cases.append((rng.dirichlet(np.full(v, alpha)), rng.dirichlet(np.full(v, alpha))))
    v = 12
    q = np.full(v, 1e-6 / (v - 1))
    q[3] = 1 - 1e-6
    cases.append((rng.dirichlet(np.full(v, 0.5)), q))
    q = rng.dirichlet(np.full(v, 0.5))
    q[:4] = 0.0
    cases.append((rng.dirichlet(np.full(v, 0.5)), q / q.sum()))
    for p, q in cases:
        ks = [2, 3, 4, 6]
        fast = wor_cut_values(p, q, ks)
        for k in ks:
            exact = optimal_wor_exact(p, q, k)
            assert fast[k] == pytest.approx(exact, abs=1e-10), (k, p, q)
        assert optimal_acceptance(p, q, 3, replacement=False) == pytest.approx(optimal_wor_exact(p, q, 3),
                                                                                 abs=1e-10)


def stay_probability_k3(q: np.ndarray, s: np.ndarray) -> float:
    """P(the first 3 draws without replacement all lie in S), summed over ordered pairs (x, y)."""
    qs = q[s]
    mass = qs.sum()
    pair = np.outer(qs, qs) / (1 - qs)[:, None]  # P(x then y)
    third = (mass - qs[:, None] - qs[None, :]) / (1 - qs[:, None] - qs[None, :])
    np.fill_diagonal(pair, 0.0)
    return float((pair * third).sum())


def test_fast_without_replacement_k3_at_larger_vocabulary():
    # For k = 3 the probability that all draws avoid a cut has a V x V closed form, so the
    # quadrature and its pruning can be checked exactly at V = 150, over every sorted prefix.
    rng = np.random.default_rng(12)
    for alpha in (0.3, 3.0):
        v = 150
        p, q = rng.dirichlet(np.full(v, alpha)), rng.dirichlet(np.full(v, alpha))
        order = np.argsort(-(p / q), kind="stable")
        cuts = [1 - p[order[:m]].sum() + 1 - stay_probability_k3(q, order[m:]) for m in range(v + 1)]
        assert optimal_acceptance(p, q, 3, replacement=False) == pytest.approx(min(cuts), abs=1e-11)


# --------------------------------------------------------------------------------------------
# Special cases
# --------------------------------------------------------------------------------------------


def test_support_smaller_than_k_without_replacement():
    p = np.array([0.2, 0.0, 0.7, 0.1])
    q = np.array([0.6, 0.0, 0.4, 0.0])
    # Two drafts without replacement are always {0, 2}: the rate is p({0, 2}) for every k >= 2.
    for k in (2, 3, 5):
        assert optimal_acceptance(p, q, k, replacement=False) == pytest.approx(0.9)
        assert wor_cut_values(p, q, [k])[k] == pytest.approx(0.9)
        assert rrs_acceptance(p, q, k, replacement=False) <= 0.9 + 1e-12
    # Two i.i.d. drafts contain token 2 with probability 0.64 < p(2): at most 0.64 + p(0).
    assert optimal_acceptance(p, q, 2) == pytest.approx(0.84)


def test_preset_shows_the_without_replacement_gap():
    p, q = wor_beats_iid_example()
    iid = optimal_acceptance(p, q, 2)
    wor = optimal_acceptance(p, q, 2, replacement=False)
    assert wor - iid >= 0.1
    assert iid == pytest.approx(lp_optimum(*iid_tuples(q, 2), p), abs=1e-9)
    assert wor == pytest.approx(lp_optimum(*wor_tuples(q, 2), p), abs=1e-9)
    assert optimal_acceptance(p, q, 1) == pytest.approx(optimal_acceptance(p, q, 1, replacement=False))
