"""Draft-tuple laws, the coupling LP and brute-force cuts for the theory tests, independent of
opttree.theory's code; and the small (p, q) instances they run on."""

from __future__ import annotations

import itertools
import math

import numpy as np
from scipy.optimize import linprog
from scipy.sparse import csr_matrix


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
