"""Scheme rates on a trace's recorded row (`topk_rows`, opttree/trace.py), for the Theory tab and
the theory table.

A row holds the union of the target's and the draft's top 8 tokens, not the whole vocabulary; the
rest is one extra entry, seen as one token by the sampled schemes and split into small pieces for
the fixed-set ones (docs/theory.md#rates-on-a-recorded-row).
"""

from __future__ import annotations

import math

import numpy as np

from opttree.theory.table import scheme_table
from opttree.theory.verifiers import greedy_draft_acceptance, topk_set_acceptance
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
    """`scheme_table` for a recorded row, with the rest handled as the module says."""
    p, q, _, _ = row_distributions(row)
    table = scheme_table(p, q, ks)
    sp, sq = split_rest(p, q)
    table["greedy_draft"] = [greedy_draft_acceptance(sp, sq, k) for k in table["k"]]
    table["topk_set"] = [topk_set_acceptance(sp, sq, k) for k in table["k"]]
    return table
