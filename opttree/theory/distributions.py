"""Target/draft distribution pairs: input checks, helpers shared by the rate modules, toy pairs.

Notation (docs/theory.md#setting-and-notation): p is the target's next-token distribution, q the
draft's, k the number of drafts.
"""

from __future__ import annotations

import math

import numpy as np


def check_k(k: object) -> int:
    """k as an int, or ValueError unless it is an integer >= 1 (bools refused)."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise ValueError(f"k must be an integer >= 1, got {k!r}")
    if k < 1:
        raise ValueError(f"k must be an integer >= 1, got {k}")
    return int(k)


def _as_distribution(x: object, name: str) -> np.ndarray:
    a = np.asarray(x, dtype=np.float64)
    if a.ndim != 1 or a.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array, got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} contains non-finite values")
    if np.any(a < 0):
        raise ValueError(f"{name} has negative entries (min {a.min():.3g})")
    total = float(a.sum())
    if abs(total - 1.0) > 1e-6:
        raise ValueError(f"{name} must sum to 1 within 1e-6, sums to {total:.9g}")
    return a / total


def validate(p: object, q: object, k: object) -> tuple[np.ndarray, np.ndarray, int]:
    """p and q as float64 arrays of one length, each summing to 1 within 1e-6 (then normalised), and k."""
    pa = _as_distribution(p, "p")
    qa = _as_distribution(q, "q")
    if pa.shape != qa.shape:
        raise ValueError(f"p and q must have the same length, got {pa.size} and {qa.size}")
    return pa, qa, check_k(k)


def drop_null_tokens(p: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """p and q without the tokens where both are 0: never drafted, never emitted, in no coupling."""
    keep = (p > 0) | (q > 0)
    return p[keep], q[keep]


def ratio_order(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Token order by decreasing p/q (q = 0 < p first, as +inf); ties keep index order."""
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = np.where(q > 0, p / np.where(q > 0, q, 1.0), np.inf)
    return np.argsort(-rho, kind="stable")


def _check_overrides(overrides: dict[str, float | None]) -> None:
    for name, value in overrides.items():
        if value is not None and not (isinstance(value, (int, float, np.floating)) and math.isfinite(value)
                                      and value >= 0):
            raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")


def _softmax(v: np.ndarray) -> np.ndarray:
    e = np.exp(v - v.max())
    return e / e.sum()


def toy_distributions(kind: str = "peaked", V: int = 32, seed: int = 0, *, scale: float | None = None,
                      draft_scale: float | None = None,
                      noise: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """A target/draft pair for the toy mode, deterministic in (kind, V, seed) and the overrides.

    The target is softmax(s z) with z standard normal; the draft is softmax(s' (z + σ ε)), a noisy
    copy, like a small model that mostly agrees with the big one. ``"peaked"`` uses s = s' = 3,
    σ = 0.6 (a few tokens hold most mass), ``"flat"`` s = s' = 0.7, σ = 0.6 (mass spread out), and
    ``"mismatched"`` draws p and q from independent Dirichlet(0.3) laws. For the two softmax kinds
    ``scale`` (s, the target's peakedness), ``draft_scale`` (s', the draft's; default s) and
    ``noise`` (σ, the mismatch) override the kind's values; they must be finite and >= 0.
    """
    if isinstance(V, bool) or not isinstance(V, (int, np.integer)) or V < 2:
        raise ValueError(f"V must be an integer >= 2, got {V!r}")
    rng = np.random.default_rng(seed)
    overrides = {"scale": scale, "draft_scale": draft_scale, "noise": noise}
    _check_overrides(overrides)
    if kind == "mismatched":
        if any(v is not None for v in overrides.values()):
            raise ValueError("scale, draft_scale and noise apply to the 'peaked' and 'flat' kinds only")
        p = rng.dirichlet(np.full(V, 0.3))
        q = rng.dirichlet(np.full(V, 0.3))
        return p / p.sum(), q / q.sum()
    settings = {"peaked": (3.0, 0.6), "flat": (0.7, 0.6)}
    if kind not in settings:
        raise ValueError(f"kind must be one of 'peaked', 'flat', 'mismatched', got {kind!r}")
    s, sigma = settings[kind]
    s = s if scale is None else float(scale)
    s_draft = s if draft_scale is None else float(draft_scale)
    sigma = sigma if noise is None else float(noise)
    z = rng.standard_normal(V)
    eps = rng.standard_normal(V)
    return _softmax(s * z), _softmax(s_draft * (z + sigma * eps))


def wor_beats_iid_example() -> tuple[np.ndarray, np.ndarray]:
    """A fixed (p, q) where drafting without replacement clearly beats i.i.d. drafting.

    The draft is confidently wrong: it puts 0.75 on token 3, which the target gives only 0.1.
    Two i.i.d. drafts are both token 3 with probability 0.5625, so the second draft is often
    wasted; without replacement the second draft is always a different token. At k = 2 the
    optimal acceptance is 0.5375 with i.i.d. drafts and about 0.916 without replacement (both
    equal 1 - TV = 0.35 at k = 1).
    """
    p = np.array([0.5, 0.3, 0.1, 0.1])
    q = np.array([0.1, 0.1, 0.05, 0.75])
    return p, q
