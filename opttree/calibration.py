"""E(A) against A over many steps, as the OPT-Tree paper's Figure 4 relates them.

Per step, A is a small integer (0, 1, 2, …) while E(A) = Σ p̂ is a real number, so a per-step
Pearson r is held down by that rounding even when E(A) predicts A well on average. The paper's
view is a density over steps; its calibration is read from the mean A per E(A) bin. `calibrate`
bins the steps into E(A) deciles (equal-count bins) and returns each bin's mean E(A), mean A and
standard error, the Pearson r between the bin means (the binned r), the least-squares slope of mean
A on mean E(A) (1 = calibrated, below 1 = E(A) over-predicts), and the per-step r alongside.
`ea_a_pairs` picks a run's calibration points, so the app's views and the benchmark report both
calibrate over the same steps. Pure Python.
"""

from __future__ import annotations

import math

from opttree.trace import committed_draft


def ea_a_pairs(steps: list[dict]) -> list[list[float]]:
    """[E(A), A] of each step that drafted a tree, A the draft tokens it committed (a step cut by EOS or
    the token limit counts only those). A step without a tree (a run's last single token, a lookup or Token
    Recycling step that found nothing) has E(A) = A = 0 whatever the drafter believes: no calibration
    point, so it is left out."""
    return [[s["expected_accept"], committed_draft(s)] for s in steps if s.get("tokens")]


SAME = 1e-9    # values this close, relative to their size, are one value (float rounding, not spread)


def _spread(values: list[float]) -> bool:
    """Whether the values differ by more than rounding: the mean of seven 0.1s is 0.10000000000000002, so
    a constant series has a centred sum of squares of about 1e-33, not 0, and an r or slope over it would
    be rounding noise (a slope of 9.14 over seven equal E(A))."""
    lo, hi = min(values), max(values)
    return hi - lo > SAME * max(abs(lo), abs(hi), 1.0)


def _moments(xs: list[float], ys: list[float]) -> tuple[float, float, float] | None:
    """(Sxx, Syy, Sxy): the centred sums of squares and products, Sxx (Syy) 0 where the xs (ys) do not
    spread beyond rounding; None below two points."""
    n = len(xs)
    if n < 2:
        return None
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs) if _spread(xs) else 0.0
    syy = sum((y - my) ** 2 for y in ys) if _spread(ys) else 0.0
    return sxx, syy, sum((x - mx) * (y - my) for x, y in zip(xs, ys))


def pearson(xs: list[float], ys: list[float]) -> float | None:
    m = _moments(xs, ys)
    if m is None or m[0] <= 0 or m[1] <= 0:
        return None
    return m[2] / math.sqrt(m[0] * m[1])


def slope(xs: list[float], ys: list[float]) -> float | None:
    """Least-squares slope of ys on xs."""
    m = _moments(xs, ys)
    return m[2] / m[0] if m is not None and m[0] > 0 else None


def calibrate(ea: list[float], a: list[float], bins: int = 10) -> dict:
    """Bins of equal step counts by E(A) (deciles by default) and the binned statistics.

    Returns {"steps", "bins": [{"ea", "a", "sem", "steps", "lo", "hi"}], "binned_r", "slope",
    "per_step_r"}; r and slope are None when there is too little spread to compute them."""
    pairs = sorted(zip(map(float, ea), map(float, a)))
    n = len(pairs)
    out = []
    k = min(bins, n)
    for b in range(k):
        chunk = pairs[b * n // k:(b + 1) * n // k]
        if not chunk:
            continue
        xs, ys = [p[0] for p in chunk], [p[1] for p in chunk]
        my = sum(ys) / len(ys)
        var = sum((y - my) ** 2 for y in ys) / (len(ys) - 1) if len(ys) > 1 else 0.0
        out.append({"ea": sum(xs) / len(xs), "a": my, "sem": math.sqrt(var / len(ys)), "steps": len(chunk),
                    "lo": xs[0], "hi": xs[-1]})
    mx, my = [b["ea"] for b in out], [b["a"] for b in out]
    return {"steps": n, "bins": out, "binned_r": pearson(mx, my) if len(out) >= 3 else None,
            "slope": slope(mx, my) if len(out) >= 2 else None, "per_step_r": pearson(*zip(*pairs)) if n >= 2 else None}
