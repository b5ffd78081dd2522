"""Every scheme's acceptance rate for k = 1..8 at one (p, q): the Theory tab's and theory table's columns."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from opttree.theory.distributions import check_k, validate
from opttree.theory.optimal import optimal_iid, optimal_wor_many
from opttree.theory.rrs import RRS_MC_PATHS, RRS_MC_SEED, rrs_iid, rrs_wor_all
from opttree.theory.verifiers import greedy_draft_acceptance, kseq_acceptance, topk_set_acceptance

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
    ks = [check_k(k) for k in ks]
    if not ks:
        raise ValueError("ks must contain at least one k")
    pa, qa, _ = validate(p, q, 1)
    kmax = max(ks)
    wor = optimal_wor_many(pa, qa, sorted(set(ks)))
    rrs_means, rrs_errs = rrs_wor_all(pa, qa, kmax, RRS_MC_PATHS, RRS_MC_SEED)
    table: dict[str, list[float]] = {name: [] for name in ("k", *SCHEMES, "rrs_wor_stderr")}
    for k in ks:
        table["k"].append(k)
        table["optimal_iid"].append(optimal_iid(pa, qa, k))
        table["optimal_wor"].append(wor[k])
        table["greedy_draft"].append(greedy_draft_acceptance(pa, qa, k))
        table["rrs_iid"].append(rrs_iid(pa, qa, k))
        table["rrs_wor"].append(float(np.clip(1.0 - rrs_means[k], 0.0, 1.0)))
        table["rrs_wor_stderr"].append(float(rrs_errs[k]))
        table["kseq"].append(kseq_acceptance(pa, qa, k))
        table["topk_set"].append(topk_set_acceptance(pa, qa, k))
    return table
