"""Tests for opttree.theory's verifiers' rates (rrs.py, verifiers.py).

The closed forms are checked against seeded Monte Carlo simulations of the verifiers themselves,
which also check that each verifier is lossless.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from theory_coupling import lp_optimum

from opttree.theory.rrs import rrs_acceptance, rrs_wor_estimate, rrs_wor_exact, rrs_wor_is_exact, rrs_wor_mc
from opttree.theory.verifiers import greedy_draft_acceptance, kseq_acceptance, kseq_scaling, topk_set_acceptance

# --------------------------------------------------------------------------------------------
# Verifiers against simulations of the verifiers
# --------------------------------------------------------------------------------------------


def sample_rows(prob: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One index per row of a (n, V) matrix of probabilities."""
    cdf = np.cumsum(prob, axis=1)
    u = rng.random(prob.shape[0]) * cdf[:, -1]
    return np.minimum((cdf < u[:, None]).sum(axis=1), prob.shape[1] - 1)


def assert_lossless(emitted: np.ndarray, p: np.ndarray):
    n = emitted.size
    freq = np.bincount(emitted, minlength=p.size) / n
    assert np.all(freq[p == 0] == 0)
    pos = p > 0
    z = (freq[pos] - p[pos]) / np.sqrt(p[pos] * (1 - p[pos]) / n + 1e-300)
    assert np.max(np.abs(z)) < 5.0, (freq, p)


def assert_rate(accepted: np.ndarray, value: float):
    n = accepted.size
    se = math.sqrt(max(value * (1 - value), 1e-6) / n)
    assert abs(accepted.mean() - value) < 5 * se, (accepted.mean(), value, se)


def simulate_rrs(p, q, k, n, rng, replacement):
    """Recursive rejection sampling, straight from its definition."""
    v = p.size
    if replacement:
        drafts = rng.choice(v, size=(n, k), p=q)
    else:  # Gumbel-top-k = successive sampling without replacement
        with np.errstate(divide="ignore"):
            keys = np.log(q)[None, :] + rng.gumbel(size=(n, v))
        drafts = np.argsort(-keys, axis=1)[:, :k]
        drafts[:, int(np.count_nonzero(q > 0)):] = -1  # support exhausted: no such draft
    resid = np.tile(p, (n, 1))
    removed = np.zeros((n, v), dtype=bool)
    done = np.zeros(n, dtype=bool)
    emitted = np.full(n, -1)
    rows = np.arange(n)
    for i in range(drafts.shape[1]):
        x = drafts[:, i]
        live = ~done & (x >= 0)
        qi = np.where(removed, 0.0, q[None, :])
        qi /= np.maximum(qi.sum(axis=1, keepdims=True), 1e-300)
        xs = np.maximum(x, 0)
        ratio = resid[rows, xs] / np.maximum(qi[rows, xs], 1e-300)
        acc = live & (rng.random(n) < np.minimum(1.0, ratio))
        emitted[acc] = x[acc]
        done |= acc
        rej = live & ~acc
        new = np.clip(resid - qi, 0.0, None)
        new /= np.maximum(new.sum(axis=1, keepdims=True), 1e-300)
        resid[rej] = new[rej]
        if not replacement:
            removed[rej, xs[rej]] = True
    accepted = done.copy()
    rest = ~done
    emitted[rest] = sample_rows(resid[rest], rng)
    return emitted, accepted


def simulate_kseq(p, q, k, n, rng):
    rho = kseq_scaling(p, q, k)
    beta = np.minimum(q, p / rho).sum()
    drafts = rng.choice(p.size, size=(n, k), p=q)
    emitted = np.full(n, -1)
    done = np.zeros(n, dtype=bool)
    for i in range(k):
        x = drafts[:, i]
        acc = ~done & (rng.random(n) < np.minimum(1.0, p[x] / (rho * q[x])))
        emitted[acc] = x[acc]
        done |= acc
    scale = (1 - (1 - beta) ** k) / beta
    res = p - np.minimum(q, p / rho) * scale
    assert res.min() > -1e-12  # the residual is a distribution at SpecTr's ρ*
    res = np.clip(res, 0, None)
    rest = ~done
    emitted[rest] = rng.choice(p.size, size=int(rest.sum()), p=res / res.sum())
    return emitted, done


def simulate_greedy(p, q, k, n, rng):
    """Greedy drafts and the verifier from the module's comments: spec-sample q' against p."""
    order = np.argsort(-q, kind="stable")
    fixed, rest = order[: k - 1], order[k - 1:]
    q_last = np.zeros_like(q)
    q_last[rest] = q[rest] / q[rest].sum()
    x = rng.choice(p.size, size=n, p=q_last)
    keep = rng.random(n) < np.minimum(1.0, p[x] / q_last[x])
    res = np.clip(p - np.minimum(p, q_last), 0, None)
    y = np.where(keep, x, rng.choice(p.size, size=n, p=res / res.sum()))
    accepted = (y == x) | np.isin(y, fixed)
    return y, accepted


VERIFIER_CASES = [
    (np.array([0.5, 0.2, 0.2, 0.1]), np.array([0.1, 0.4, 0.3, 0.2])),
    (np.array([0.05, 0.6, 0.3, 0.05, 0.0]), np.array([0.5, 0.1, 0.0, 0.3, 0.1])),
    (np.array([0.3, 0.3, 0.2, 0.1, 0.1, 0.0]), np.array([0.05, 0.05, 0.1, 0.1, 0.3, 0.4])),
]


@pytest.mark.parametrize("case", range(len(VERIFIER_CASES)))
def test_verifier_closed_forms_match_simulation(case):
    p, q = VERIFIER_CASES[case]
    rng = np.random.default_rng(100 + case)
    n = 200_000
    for k in (2, 3):
        emitted, accepted = simulate_rrs(p, q, k, n, rng, replacement=True)
        assert_lossless(emitted, p)
        assert_rate(accepted, rrs_acceptance(p, q, k))
        emitted, accepted = simulate_rrs(p, q, k, n, rng, replacement=False)
        assert_lossless(emitted, p)
        assert_rate(accepted, rrs_acceptance(p, q, k, replacement=False))
        emitted, accepted = simulate_kseq(p, q, k, n, rng)
        assert_lossless(emitted, p)
        assert_rate(accepted, kseq_acceptance(p, q, k))
        emitted, accepted = simulate_greedy(p, q, k, n, rng)
        assert_lossless(emitted, p)
        assert_rate(accepted, greedy_draft_acceptance(p, q, k))
        # The project's rule for a fixed top-k set: the target samples Y ~ p, accepted iff Y ∈ T.
        y = rng.choice(p.size, size=n, p=p)
        assert_rate(np.isin(y, np.argsort(-q, kind="stable")[:k]), topk_set_acceptance(p, q, k))


def test_kseq_scaling_is_the_smallest_lossless_one():
    rng = np.random.default_rng(3)
    for _ in range(20):
        p, q = rng.dirichlet(np.ones(6)), rng.dirichlet(np.ones(6))
        for k in (2, 4):
            rho = kseq_scaling(p, q, k)
            assert 1.0 <= rho <= k
            if rho > 1.0 + 1e-9:  # a slightly smaller ρ leaves a negative residual
                r = rho * (1 - 1e-6)
                beta = np.minimum(q, p / r).sum()
                assert (p - np.minimum(q, p / r) * (1 - (1 - beta) ** k) / beta).min() < 0


def test_rrs_without_replacement_monte_carlo_is_unbiased():
    # The module's Monte Carlo path (used for big trees) against its exact enumeration.
    rng = np.random.default_rng(5)
    for alpha in (0.3, 2.0):
        p, q = rng.dirichlet(np.full(9, alpha)), rng.dirichlet(np.full(9, alpha))
        exact = rrs_wor_exact(p, q, 4)
        means, errs = rrs_wor_mc(p, q, 4, 20_000, np.random.default_rng(1))
        assert np.all(np.abs(means - exact) <= 5 * errs + 1e-12)
        assert np.all(errs[2:] > 0)


def test_rrs_without_replacement_large_tree_matches_simulation():
    rng = np.random.default_rng(9)
    v, k = 40, 4
    p, q = rng.dirichlet(np.full(v, 0.5)), rng.dirichlet(np.full(v, 0.5))
    assert not rrs_wor_is_exact(q, k)  # the module estimates
    value, se = rrs_wor_estimate(p, q, k)
    assert se > 0
    assert rrs_acceptance(p, q, k, replacement=False) == value  # same seeded estimate
    n = 60_000
    emitted, accepted = simulate_rrs(p, q, k, n, np.random.default_rng(10), replacement=False)
    assert_lossless(emitted, p)
    se_sim = math.sqrt(value * (1 - value) / n)
    assert abs(accepted.mean() - value) < 5 * math.hypot(se, se_sim)


# --------------------------------------------------------------------------------------------
# A fixed top-k set
# --------------------------------------------------------------------------------------------


def test_topk_set_is_target_mass_of_the_set_and_cannot_be_beaten():
    p = np.array([0.1, 0.4, 0.3, 0.2])
    q = np.array([0.4, 0.1, 0.4, 0.1])  # ties broken by index: top-2 = {0, 2}
    assert topk_set_acceptance(p, q, 2) == pytest.approx(0.4)
    # LP over couplings with that one deterministic draft set: nothing beats p(T).
    assert lp_optimum([(0, 2)], np.array([1.0]), p) == pytest.approx(0.4)
