"""Tests for opttree.theory: optimal multi-draft acceptance rates and existing verifiers.

The optima are checked against a linear program over couplings (scipy's HiGHS) and against
brute force over all cuts; the verifiers' closed forms against seeded Monte Carlo simulations of
the verifiers themselves, which also check that each verifier is lossless.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.optimize import linprog
from scipy.sparse import csr_matrix

from opttree import theory as th

# --------------------------------------------------------------------------------------------
# Draft-tuple laws and the coupling LP (independent of the module's code)
# --------------------------------------------------------------------------------------------


def iid_tuples(q: np.ndarray, k: int) -> tuple[list[tuple[int, ...]], np.ndarray]:
    tuples, probs = [], []
    for t in itertools.product(range(q.size), repeat=k):
        pr = float(np.prod(q[list(t)]))
        if pr > 0:
            tuples.append(t)
            probs.append(pr)
    return tuples, np.array(probs)


def wor_tuples(q: np.ndarray, k: int) -> tuple[list[tuple[int, ...]], np.ndarray]:
    support = [int(x) for x in np.flatnonzero(q > 0)]
    length = min(k, len(support))
    tuples, probs = [], []
    for t in itertools.permutations(support, length):
        pr = 1.0
        for i, x in enumerate(t):
            remaining = math.fsum(q[y] for y in support if y not in t[:i])
            pr *= q[x] / remaining
        tuples.append(t)
        probs.append(pr)
    return tuples, np.array(probs)


def greedy_tuples(q: np.ndarray, k: int) -> tuple[list[tuple[int, ...]], np.ndarray]:
    order = [int(x) for x in np.argsort(-q, kind="stable")]
    fixed, rest = tuple(order[: k - 1]), order[k - 1:]
    mass = math.fsum(q[x] for x in rest)
    if mass == 0:
        return [fixed], np.array([1.0])
    tuples = [(*fixed, x) for x in rest if q[x] > 0]
    return tuples, np.array([q[t[-1]] / mass for t in tuples])


def lp_optimum(tuples: list[tuple[int, ...]], probs: np.ndarray, p: np.ndarray) -> float:
    """max P(Y ∈ tuple) over joint laws of (tuple, Y) with the given marginals.

    Variables: the joint mass of every (draft tuple, target token) pair. Both marginals sum to
    1, so the last target-marginal row is implied by the others and is left out (with it, HiGHS's
    presolve can misjudge the rank-deficient system as infeasible).
    """
    n_t, v = len(tuples), p.size
    c = np.array([-1.0 if y in t else 0.0 for t in tuples for y in range(v)])
    rows, cols = [], []
    for i in range(n_t):
        for y in range(v):
            rows += [i, n_t + y]
            cols += [i * v + y, i * v + y]
    a_eq = csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n_t + v, n_t * v))[:-1]
    b_eq = np.concatenate((probs / probs.sum(), p))[:-1]
    res = linprog(c, A_eq=a_eq, b_eq=b_eq, bounds=(0, None), method="highs")
    assert res.status == 0, res.message
    return -res.fun


def min_cut_brute(p: np.ndarray, tuples: list[tuple[int, ...]], probs: np.ndarray) -> float:
    """Formula (1) over all 2^V token sets H."""
    best = 1.0
    for r in range(p.size + 1):
        for h in itertools.combinations(range(p.size), r):
            hs = set(h)
            hit = sum(pr for t, pr in zip(tuples, probs) if hs.intersection(t))
            best = min(best, 1.0 - p[list(h)].sum() + hit)
    return best


def small_instances() -> list[tuple[str, np.ndarray, np.ndarray]]:
    """Peaked (Dirichlet 0.2), flat (Dirichlet 5), with zeros, and with tied ratios p/q."""
    rng = np.random.default_rng(2025)
    out = []
    for kind, alpha in (("peaked", 0.2), ("flat", 5.0), ("zeros", 0.7)):
        for _ in range(15):
            v = int(rng.integers(3, 7))
            p = rng.dirichlet(np.full(v, alpha))
            q = rng.dirichlet(np.full(v, alpha))
            if kind == "zeros":
                q[rng.choice(v, size=int(rng.integers(1, v - 1)), replace=False)] = 0.0
                p[rng.integers(v)] = 0.0
                if p.sum() == 0:
                    p[0] = 1.0
            out.append((kind, p / p.sum(), q / q.sum()))
    ties = [
        ([0.3, 0.3, 0.1, 0.1, 0.2], [0.2, 0.2, 0.2, 0.2, 0.2]),
        ([0.2, 0.2, 0.3, 0.3], [0.1, 0.1, 0.4, 0.4]),
        ([0.25, 0.25, 0.25, 0.25, 0.0], [0.1, 0.3, 0.1, 0.3, 0.2]),
        ([0.4, 0.2, 0.2, 0.1, 0.1], [0.4, 0.2, 0.2, 0.1, 0.1]),
    ]
    out += [("ties", np.array(p), np.array(q)) for p, q in ties]
    return out


SMALL = small_instances()

# --------------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("p", "q", "k", "match"),
    [
        ([0.5, 0.5], [1.0], 1, "same length"),
        ([0.5, 0.5], [1.2, -0.2], 1, "negative"),
        ([0.5, 0.4], [0.5, 0.5], 1, "sum to 1"),
        ([[0.5, 0.5]], [[0.5, 0.5]], 1, "1-D"),
        ([0.5, np.nan], [0.5, 0.5], 1, "non-finite"),
        ([0.5, 0.5], [0.5, 0.5], 0, "k must be"),
        ([0.5, 0.5], [0.5, 0.5], 2.5, "k must be"),
        ([0.5, 0.5], [0.5, 0.5], True, "k must be"),
    ],
)
def test_invalid_inputs_raise(p, q, k, match):
    fns = [
        lambda: th.optimal_acceptance(p, q, k),
        lambda: th.optimal_acceptance(p, q, k, replacement=False),
        lambda: th.greedy_draft_acceptance(p, q, k),
        lambda: th.rrs_acceptance(p, q, k),
        lambda: th.rrs_acceptance(p, q, k, replacement=False),
        lambda: th.kseq_acceptance(p, q, k),
        lambda: th.topk_set_acceptance(p, q, k),
    ]
    for fn in fns:
        with pytest.raises(ValueError, match=match):
            fn()


def test_sums_within_tolerance_are_normalised():
    p = np.array([0.5, 0.5 + 5e-7])
    q = np.array([0.25, 0.75 - 5e-7])
    assert th.optimal_acceptance(p, q, 1) == pytest.approx(1 - 0.25, abs=1e-6)
    assert th.optimal_acceptance(np.array([0.6, 0.4]), np.array([0.6, 0.4]), np.int64(3)) == pytest.approx(1.0)


# --------------------------------------------------------------------------------------------
# Optima against the coupling LP
# --------------------------------------------------------------------------------------------


def test_optimal_rates_match_coupling_lp():
    worst = 0.0
    for kind, p, q in SMALL:
        for k in (1, 2, 3):
            cases = [
                (th.optimal_acceptance(p, q, k), iid_tuples(q, k)),
                (th.optimal_acceptance(p, q, k, replacement=False), wor_tuples(q, k)),
                (th._wor_cut_values(p, q, [k])[k], wor_tuples(q, k)),  # sorted-prefix path
                (th.greedy_draft_acceptance(p, q, k), greedy_tuples(q, k)),
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
        assert th._wor_cut_values(p, q, [k])[k] == pytest.approx(min_cut_brute(p, tuples, probs), abs=1e-12)


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
        fast = th._wor_cut_values(p, q, ks)
        for k in ks:
            exact = th._optimal_wor_exact(p, q, k)
            assert fast[k] == pytest.approx(exact, abs=1e-10), (k, p, q)
        assert th.optimal_acceptance(p, q, 3, replacement=False) == pytest.approx(th._optimal_wor_exact(p, q, 3),
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
        assert th.optimal_acceptance(p, q, 3, replacement=False) == pytest.approx(min(cuts), abs=1e-11)


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
    rho = th.kseq_scaling(p, q, k)
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
        assert_rate(accepted, th.rrs_acceptance(p, q, k))
        emitted, accepted = simulate_rrs(p, q, k, n, rng, replacement=False)
        assert_lossless(emitted, p)
        assert_rate(accepted, th.rrs_acceptance(p, q, k, replacement=False))
        emitted, accepted = simulate_kseq(p, q, k, n, rng)
        assert_lossless(emitted, p)
        assert_rate(accepted, th.kseq_acceptance(p, q, k))
        emitted, accepted = simulate_greedy(p, q, k, n, rng)
        assert_lossless(emitted, p)
        assert_rate(accepted, th.greedy_draft_acceptance(p, q, k))
        # The project's rule for a fixed top-k set: the target samples Y ~ p, accepted iff Y ∈ T.
        y = rng.choice(p.size, size=n, p=p)
        assert_rate(np.isin(y, np.argsort(-q, kind="stable")[:k]), th.topk_set_acceptance(p, q, k))


def test_kseq_scaling_is_the_smallest_lossless_one():
    rng = np.random.default_rng(3)
    for _ in range(20):
        p, q = rng.dirichlet(np.ones(6)), rng.dirichlet(np.ones(6))
        for k in (2, 4):
            rho = th.kseq_scaling(p, q, k)
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
        exact = th._rrs_wor_exact(p, q, 4)
        means, errs = th._rrs_wor_mc(p, q, 4, 20_000, np.random.default_rng(1))
        assert np.all(np.abs(means - exact) <= 5 * errs + 1e-12)
        assert np.all(errs[2:] > 0)


def test_rrs_without_replacement_large_tree_matches_simulation():
    rng = np.random.default_rng(9)
    v, k = 40, 4
    p, q = rng.dirichlet(np.full(v, 0.5)), rng.dirichlet(np.full(v, 0.5))
    assert not th._rrs_wor_is_exact(q, k)  # the module estimates
    value, se = th.rrs_wor_estimate(p, q, k)
    assert se > 0
    assert th.rrs_acceptance(p, q, k, replacement=False) == value  # same seeded estimate
    n = 60_000
    emitted, accepted = simulate_rrs(p, q, k, n, np.random.default_rng(10), replacement=False)
    assert_lossless(emitted, p)
    se_sim = math.sqrt(value * (1 - value) / n)
    assert abs(accepted.mean() - value) < 5 * math.hypot(se, se_sim)


# --------------------------------------------------------------------------------------------
# Orderings and special cases
# --------------------------------------------------------------------------------------------

SAMPLED = ("optimal_iid", "optimal_wor", "greedy_draft", "rrs_iid", "rrs_wor", "kseq")


def check_table(table: dict[str, list[float]], tol: float = 1e-9):
    for name in (*th.SCHEMES,):
        vals = np.array(table[name])
        assert np.all((vals >= 0) & (vals <= 1)), name
        assert np.all(np.diff(vals) >= -tol), (name, vals)  # non-decreasing in k
    opt_iid, opt_wor = np.array(table["optimal_iid"]), np.array(table["optimal_wor"])
    slack = 5 * np.array(table["rrs_wor_stderr"]) + tol
    assert np.all(np.array(table["rrs_iid"]) <= opt_iid + tol)
    assert np.all(np.array(table["kseq"]) <= opt_iid + tol)
    assert np.all(np.array(table["rrs_wor"]) <= opt_wor + slack)
    assert np.all(opt_wor >= opt_iid - tol)


def test_orderings_and_special_cases():
    rng = np.random.default_rng(21)
    for v, alpha in ((4, 0.3), (6, 3.0), (15, 0.3), (60, 1.0), (300, 0.2)):
        p, q = rng.dirichlet(np.full(v, alpha)), rng.dirichlet(np.full(v, alpha))
        table = th.scheme_table(p, q, ks=range(1, 7))
        check_table(table)
        tv = 0.5 * np.abs(p - q).sum()
        for name in SAMPLED:  # one draft: single-draft speculative sampling
            assert table[name][0] == pytest.approx(1 - tv, abs=1e-9), name
        assert table["topk_set"][0] == pytest.approx(p[np.argmax(q)])
        same = th.scheme_table(p, p, ks=(1, 2, 5))
        for name in SAMPLED:
            assert same[name] == pytest.approx([1.0, 1.0, 1.0], abs=1e-9), name


def test_support_smaller_than_k_without_replacement():
    p = np.array([0.2, 0.0, 0.7, 0.1])
    q = np.array([0.6, 0.0, 0.4, 0.0])
    # Two drafts without replacement are always {0, 2}: the rate is p({0, 2}) for every k >= 2.
    for k in (2, 3, 5):
        assert th.optimal_acceptance(p, q, k, replacement=False) == pytest.approx(0.9)
        assert th._wor_cut_values(p, q, [k])[k] == pytest.approx(0.9)
        assert th.rrs_acceptance(p, q, k, replacement=False) <= 0.9 + 1e-12
    # Two i.i.d. drafts contain token 2 with probability 0.64 < p(2): at most 0.64 + p(0).
    assert th.optimal_acceptance(p, q, 2) == pytest.approx(0.84)


def test_topk_set_is_target_mass_of_the_set_and_cannot_be_beaten():
    p = np.array([0.1, 0.4, 0.3, 0.2])
    q = np.array([0.4, 0.1, 0.4, 0.1])  # ties broken by index: top-2 = {0, 2}
    assert th.topk_set_acceptance(p, q, 2) == pytest.approx(0.4)
    # LP over couplings with that one deterministic draft set: nothing beats p(T).
    assert lp_optimum([(0, 2)], np.array([1.0]), p) == pytest.approx(0.4)


def test_large_vocabulary_runs_and_orders():
    rng = np.random.default_rng(0)
    v = 49_152
    p, q = rng.dirichlet(np.full(v, 0.3)), rng.dirichlet(np.full(v, 0.3))
    table = th.scheme_table(p, q, ks=(1, 2, 4, 8))
    check_table(table)
    for k in (3, 8):
        iid = th.optimal_acceptance(p, q, k)
        wor = th.optimal_acceptance(p, q, k, replacement=False)
        assert 0.0 <= iid <= wor <= 1.0
    # A peaked, correlated pair (like a real drafter): exercises truncation and big clocks.
    z = rng.standard_normal(v)
    logits_p, logits_q = 12 * z, 12 * (z + 0.5 * rng.standard_normal(v))
    p = np.exp(logits_p - logits_p.max())
    q = np.exp(logits_q - logits_q.max())
    table = th.scheme_table(p / p.sum(), q / q.sum(), ks=(1, 3, 8))
    check_table(table)


# --------------------------------------------------------------------------------------------
# Table, toys, preset
# --------------------------------------------------------------------------------------------


def test_scheme_table_structure():
    p, q = th.toy_distributions("peaked", V=8, seed=1)
    table = th.scheme_table(p, q, ks=[3, 1, 2])
    assert set(table) == {"k", *th.SCHEMES, "rrs_wor_stderr"}
    assert table["k"] == [3, 1, 2]
    assert all(len(v) == 3 for v in table.values())
    assert table["rrs_wor_stderr"] == [0.0, 0.0, 0.0]  # small tree: exact
    assert table["optimal_wor"][0] == pytest.approx(th.optimal_acceptance(p, q, 3, replacement=False))
    with pytest.raises(ValueError):
        th.scheme_table(p, q, ks=[])


def test_toy_distributions():
    for kind in ("peaked", "flat", "mismatched"):
        p, q = th.toy_distributions(kind, V=50, seed=4)
        assert p.shape == q.shape == (50,)
        assert p.sum() == pytest.approx(1) and q.sum() == pytest.approx(1)
        assert np.all(p >= 0) and np.all(q >= 0)
        p2, q2 = th.toy_distributions(kind, V=50, seed=4)
        assert np.array_equal(p, p2) and np.array_equal(q, q2)
    assert th.toy_distributions("peaked", 50, 0)[0].max() > th.toy_distributions("flat", 50, 0)[0].max()
    with pytest.raises(ValueError):
        th.toy_distributions("spiky", 10, 0)
    with pytest.raises(ValueError):
        th.toy_distributions("flat", 1, 0)



def test_toy_sliders_override_peakedness_and_mismatch():
    p, q = th.toy_distributions("peaked", V=40, seed=2, noise=0.0)
    assert np.allclose(p, q)                                  # no mismatch: the draft is the target
    base_p, base_q = th.toy_distributions("peaked", V=40, seed=2)
    assert np.array_equal(th.toy_distributions("peaked", V=40, seed=2, scale=3.0, noise=0.6)[0], base_p)
    sharp, _ = th.toy_distributions("flat", V=40, seed=2, scale=5.0)
    assert sharp.max() > th.toy_distributions("flat", V=40, seed=2)[0].max()
    p2, q_flat = th.toy_distributions("peaked", V=40, seed=2, draft_scale=0.1)
    assert np.array_equal(p2, base_p) and q_flat.max() < base_q.max()   # only the draft flattens
    far = th.toy_distributions("peaked", V=40, seed=2, noise=3.0)
    tv = lambda a, b: 0.5 * np.abs(a - b).sum()  # noqa: E731
    assert tv(*far) > tv(base_p, base_q)
    for bad in (dict(scale=-1.0), dict(noise=float("nan")), dict(draft_scale="2")):
        with pytest.raises(ValueError):
            th.toy_distributions("peaked", 10, 0, **bad)
    with pytest.raises(ValueError):
        th.toy_distributions("mismatched", 10, 0, noise=0.5)

def test_preset_shows_the_without_replacement_gap():
    p, q = th.wor_beats_iid_example()
    iid = th.optimal_acceptance(p, q, 2)
    wor = th.optimal_acceptance(p, q, 2, replacement=False)
    assert wor - iid >= 0.1
    assert iid == pytest.approx(lp_optimum(*iid_tuples(q, 2), p), abs=1e-9)
    assert wor == pytest.approx(lp_optimum(*wor_tuples(q, 2), p), abs=1e-9)
    assert th.optimal_acceptance(p, q, 1) == pytest.approx(th.optimal_acceptance(p, q, 1, replacement=False))
