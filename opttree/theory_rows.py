"""Scheme rates on a trace's recorded row (`topk_rows`, opttree/trace.py), for the Theory tab and
the theory table.

A row holds the union of the target's and the draft's top 8 tokens with both probabilities, not the
whole vocabulary. Every other token is summed into one "rest" entry (1 − the recorded mass of each
side). The sampled schemes (the optima, recursive rejection sampling, K-SEQ) see that entry as a
single token: merging tokens can only raise the two optima, so they read a little high when the rest
holds much mass. The fixed-set schemes must never pick the rest as a fixed draft token (it is many
tokens), so for them it is split into equal pieces with less draft mass than the draft's 8th most
likely token: the top-k set rate p(set) is then exact for k ≤ 8 (the draft's top 8 are all
recorded), and in the greedy-draft optimum the rest stays one bucket only in the sampled last
draft's term (the pieces' share of Σ min(p, q / q(R)) adds up to the bucket's).
"""

from __future__ import annotations

import math

import numpy as np

from opttree.theory import greedy_draft_acceptance, scheme_table, topk_set_acceptance
from opttree.trace import TOPK


def row_distributions(row: dict) -> tuple[np.ndarray, np.ndarray, float, float]:
    """p and q over a row's tokens plus one last "rest" entry (it may be 0), both normalised; and the
    two rest masses. Index i < len(row["ids"]) is token row["ids"][i]."""
    p = np.clip(np.asarray(row["p"], dtype=float), 0.0, 1.0)
    q = np.clip(np.asarray(row["q"], dtype=float), 0.0, 1.0)
    rest_p, rest_q = max(0.0, 1.0 - float(p.sum())), max(0.0, 1.0 - float(q.sum()))
    p, q = np.append(p, rest_p), np.append(q, rest_q)
    return p / p.sum(), q / q.sum(), rest_p, rest_q


def split_rest(p: np.ndarray, q: np.ndarray, k: int = TOPK) -> tuple[np.ndarray, np.ndarray]:
    """The last (rest) entry split into equal pieces, each with less draft mass than the k-th most
    likely recorded draft token (so a rule fixing up to k of q's top tokens never picks a piece)."""
    recorded = np.sort(q[:-1][q[:-1] > 0])[::-1][:k]
    if q[-1] <= 0 or recorded.size == 0:
        return p, q
    pieces = math.floor(q[-1] / recorded[-1]) + 1
    return (np.concatenate([p[:-1], np.full(pieces, p[-1] / pieces)]),
            np.concatenate([q[:-1], np.full(pieces, q[-1] / pieces)]))


def row_scheme_table(row: dict, ks) -> dict[str, list[float]]:
    """`opttree.theory.scheme_table` for a recorded row, with the rest handled as the module says."""
    p, q, _, _ = row_distributions(row)
    table = scheme_table(p, q, ks)
    sp, sq = split_rest(p, q)
    table["greedy_draft"] = [greedy_draft_acceptance(sp, sq, k) for k in table["k"]]
    table["topk_set"] = [topk_set_acceptance(sp, sq, k) for k in table["k"]]
    return table
