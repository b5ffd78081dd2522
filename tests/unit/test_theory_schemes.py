"""Tests for opttree.theory across schemes: input checks, the orderings theory guarantees
(table.py), the table's structure and the toy distributions (distributions.py).
"""

from __future__ import annotations

import numpy as np
import pytest

from opttree.theory.distributions import toy_distributions
from opttree.theory.optimal import optimal_acceptance
from opttree.theory.rrs import rrs_acceptance
from opttree.theory.table import SCHEMES, scheme_table
from opttree.theory.verifiers import greedy_draft_acceptance, kseq_acceptance, topk_set_acceptance

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
        lambda: optimal_acceptance(p, q, k),
        lambda: optimal_acceptance(p, q, k, replacement=False),
        lambda: greedy_draft_acceptance(p, q, k),
        lambda: rrs_acceptance(p, q, k),
        lambda: rrs_acceptance(p, q, k, replacement=False),
        lambda: kseq_acceptance(p, q, k),
        lambda: topk_set_acceptance(p, q, k),
    ]
    for fn in fns:
        with pytest.raises(ValueError, match=match):
            fn()


def test_sums_within_tolerance_are_normalised():
    p = np.array([0.5, 0.5 + 5e-7])
    q = np.array([0.25, 0.75 - 5e-7])
    assert optimal_acceptance(p, q, 1) == pytest.approx(1 - 0.25, abs=1e-6)
    assert optimal_acceptance(np.array([0.6, 0.4]), np.array([0.6, 0.4]), np.int64(3)) == pytest.approx(1.0)


# --------------------------------------------------------------------------------------------
# Orderings and special cases
# --------------------------------------------------------------------------------------------


SAMPLED = ("optimal_iid", "optimal_wor", "greedy_draft", "rrs_iid", "rrs_wor", "kseq")


def check_table(table: dict[str, list[float]], tol: float = 1e-9):
    for name in (*SCHEMES,):
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
        table = scheme_table(p, q, ks=range(1, 7))
        check_table(table)
        tv = 0.5 * np.abs(p - q).sum()
        for name in SAMPLED:  # one draft: single-draft speculative sampling
            assert table[name][0] == pytest.approx(1 - tv, abs=1e-9), name
        assert table["topk_set"][0] == pytest.approx(p[np.argmax(q)])
        same = scheme_table(p, p, ks=(1, 2, 5))
        for name in SAMPLED:
            assert same[name] == pytest.approx([1.0, 1.0, 1.0], abs=1e-9), name


def test_large_vocabulary_runs_and_orders():
    rng = np.random.default_rng(0)
    v = 49_152
    p, q = rng.dirichlet(np.full(v, 0.3)), rng.dirichlet(np.full(v, 0.3))
    table = scheme_table(p, q, ks=(1, 2, 4, 8))
    check_table(table)
    for k in (3, 8):
        iid = optimal_acceptance(p, q, k)
        wor = optimal_acceptance(p, q, k, replacement=False)
        assert 0.0 <= iid <= wor <= 1.0
    # A peaked, correlated pair (like a real drafter): exercises truncation and big clocks.
    z = rng.standard_normal(v)
    logits_p, logits_q = 12 * z, 12 * (z + 0.5 * rng.standard_normal(v))
    p = np.exp(logits_p - logits_p.max())
    q = np.exp(logits_q - logits_q.max())
    table = scheme_table(p / p.sum(), q / q.sum(), ks=(1, 3, 8))
    check_table(table)


# --------------------------------------------------------------------------------------------
# Table and toys
# --------------------------------------------------------------------------------------------


def test_scheme_table_structure():
    p, q = toy_distributions("peaked", V=8, seed=1)
    table = scheme_table(p, q, ks=[3, 1, 2])
    assert set(table) == {"k", *SCHEMES, "rrs_wor_stderr"}
    assert table["k"] == [3, 1, 2]
    assert all(len(v) == 3 for v in table.values())
    assert table["rrs_wor_stderr"] == [0.0, 0.0, 0.0]  # small tree: exact
    assert table["optimal_wor"][0] == pytest.approx(optimal_acceptance(p, q, 3, replacement=False))
    with pytest.raises(ValueError):
        scheme_table(p, q, ks=[])


def test_toy_distributions():
    for kind in ("peaked", "flat", "mismatched"):
        p, q = toy_distributions(kind, V=50, seed=4)
        assert p.shape == q.shape == (50,)
        assert p.sum() == pytest.approx(1) and q.sum() == pytest.approx(1)
        assert np.all(p >= 0) and np.all(q >= 0)
        p2, q2 = toy_distributions(kind, V=50, seed=4)
        assert np.array_equal(p, p2) and np.array_equal(q, q2)
    assert toy_distributions("peaked", 50, 0)[0].max() > toy_distributions("flat", 50, 0)[0].max()
    with pytest.raises(ValueError):
        toy_distributions("spiky", 10, 0)
    with pytest.raises(ValueError):
        toy_distributions("flat", 1, 0)


def test_toy_sliders_override_peakedness_and_mismatch():
    p, q = toy_distributions("peaked", V=40, seed=2, noise=0.0)
    assert np.allclose(p, q)                                  # no mismatch: the draft is the target
    base_p, base_q = toy_distributions("peaked", V=40, seed=2)
    assert np.array_equal(toy_distributions("peaked", V=40, seed=2, scale=3.0, noise=0.6)[0], base_p)
    sharp, _ = toy_distributions("flat", V=40, seed=2, scale=5.0)
    assert sharp.max() > toy_distributions("flat", V=40, seed=2)[0].max()
    p2, q_flat = toy_distributions("peaked", V=40, seed=2, draft_scale=0.1)
    assert np.array_equal(p2, base_p) and q_flat.max() < base_q.max()   # only the draft flattens
    far = toy_distributions("peaked", V=40, seed=2, noise=3.0)
    tv = lambda a, b: 0.5 * np.abs(a - b).sum()  # noqa: E731
    assert tv(*far) > tv(base_p, base_q)
    for bad in (dict(scale=-1.0), dict(noise=float("nan")), dict(draft_scale="2")):
        with pytest.raises(ValueError):
            toy_distributions("peaked", 10, 0, **bad)
    with pytest.raises(ValueError):
        toy_distributions("mismatched", 10, 0, noise=0.5)
