"""Hardware-aware tree size: how deep to draft and how many nodes to verify, from what a forward
costs on this machine.

A step commits A + 1 tokens (the accepted draft tokens and the bonus) and costs its drafting time
plus one verification forward over the tree. Before verifying, E(A) = Σ p̂ is the expected A, so
the expected throughput of a candidate tree is

    J(d, n) = (E_d(n) + 1) / (draft time of d layers + verify time of n + 1 tokens)

where E_d(n) is the E(A) of the best n-node tree among the candidates grown in d layers (OPT-Tree's
own candidates: the best n by p̂ over those layers). The verify time comes from the measured cost
curve of the target (forward time vs tokens), the draft time from the drafter's measured cost of
one layer at each width; both arrive as plain numbers (`StepCost`), so everything here is tested
with synthetic curves.

OPT-Tree's δ rule is the special case of a flat verify cost: then n is the whole budget, and a
layer is worth drafting when it adds more than a fixed price δ to E(A). Here a layer is worth
drafting when it raises the best J (greedily, as the δ rule stops at the first layer that does not
pay), which prices a layer at its measured time × the expected throughput reached so far; with a
flat verify cost and free drafting this is the paper's rule at δ = 0 with n = the ceiling.
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass, field, replace


def interpolate(xs, ys, x: float) -> float:
    """Piecewise-linear y(x) through the points; flat below the first, the last slope beyond the last."""
    if not xs:
        return 0.0
    if x <= xs[0]:
        return float(ys[0])
    for (x0, y0), (x1, y1) in zip(zip(xs, ys), zip(xs[1:], ys[1:])):
        if x0 <= x <= x1:
            return float(y0 + (y1 - y0) * (x - x0) / (x1 - x0)) if x1 > x0 else float(y1)
    if len(xs) == 1:
        return float(ys[0])
    slope = max((ys[-1] - ys[-2]) / max(xs[-1] - xs[-2], 1e-9), 0.0)
    return float(ys[-1] + slope * (x - xs[-1]))


def monotone(ys) -> list[float]:
    """The closest non-decreasing sequence (least squares, pool-adjacent-violators): a forward over
    more tokens never costs less, so a measured dip is noise."""
    blocks: list[list[float]] = []          # [mean, weight]
    for y in ys:
        blocks.append([float(y), 1.0])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            (m1, w1), (m2, w2) = blocks[-2], blocks.pop()
            blocks[-1] = [(m1 * w1 + m2 * w2) / (w1 + w2), w1 + w2]
    return [m for m, w in blocks for _ in range(int(w))]


@dataclass(frozen=True)
class StepCost:
    """A step's costs in ms, as plain numbers: the target's forward over k tokens (root included),
    one draft layer over w nodes, and the drafting every step pays whatever the tree (`base_ms`),
    measured after a KV prefix of `prefix_tokens`; `longer`, when measured, holds the same after a
    longer prefix (attention reads the whole prefix, so on a long prompt each extra tree token costs
    more: on the 2-core CPU, 8 tokens cost 1.35x one token after 128 prefix tokens, 1.8x after 1,536)."""

    verify_tokens: tuple[int, ...]
    verify_ms: tuple[float, ...]
    layer_widths: tuple[int, ...] = (1,)
    layer_ms: tuple[float, ...] = (0.0,)
    base_ms: float = 0.0
    prefix_tokens: int = 0
    longer: StepCost | None = None

    def verify(self, tokens: int) -> float:
        return interpolate(self.verify_tokens, self.verify_ms, tokens)

    def layer(self, width: int) -> float:
        return interpolate(self.layer_widths, self.layer_ms, width) if width > 0 else 0.0

    def verify_table(self, most: int) -> tuple[float, ...]:
        """verify(k) for k = 0..most, computed once per cost curve (every layer of every step reads it)."""
        return _verify_table(self, most)

    def at_prefix(self, prefix: int) -> StepCost:
        """The costs of a step whose KV prefix holds `prefix` tokens: each point linear in the prefix
        between the two measured ones, held at the nearer one outside them (beyond the longer one
        the measured growth flattens: 1,536 tokens added less per token than 768 did). The share
        is rounded to sixteenths, so a run meets a few distinct costs and their tables stay cached."""
        if self.longer is None or self.longer.prefix_tokens <= self.prefix_tokens:
            return self
        share = (prefix - self.prefix_tokens) / (self.longer.prefix_tokens - self.prefix_tokens)
        return _at_share(self, round(min(1.0, max(0.0, share)) * 16) / 16)

    @property
    def cheapest_layer(self) -> float:
        return min(self.layer_ms, default=0.0)

    @classmethod
    def flat(cls, ms: float = 1.0) -> StepCost:
        """A verify cost that does not depend on the tree's size, and free drafting."""
        return cls((1,), (float(ms),))


def from_numbers(curve: dict) -> StepCost:
    """A StepCost from a curve's plain numbers (the form a trace's meta records, engine/cost.compact:
    `tokens`, `verify_ms`, `widths`, `layer_ms`, `base_ms`, `prefix_tokens`, `longer`), each cost made
    non-decreasing in size (a measured dip is noise: more tokens never cost less); no widths is free
    drafting."""
    longer = curve.get("longer")
    return StepCost(tuple(curve["tokens"]), tuple(monotone(curve["verify_ms"])), tuple(curve.get("widths") or [1]),
                    tuple(monotone(curve.get("layer_ms") or [0.0])), float(curve.get("base_ms") or 0.0),
                    int(curve.get("prefix_tokens") or 0), from_numbers(longer) if longer else None)


@functools.lru_cache(maxsize=64)
def _at_share(cost: StepCost, share: float) -> StepCost:
    if share == 0.0:
        return replace(cost, longer=None)
    far = cost.longer

    def mix(xs, near, far_at):
        return tuple(monotone([a + share * (far_at(x) - a) for x, a in zip(xs, near)]))

    return replace(cost, verify_ms=mix(cost.verify_tokens, cost.verify_ms, far.verify),
                   layer_ms=mix(cost.layer_widths, cost.layer_ms, far.layer),
                   base_ms=cost.base_ms + share * (far.base_ms - cost.base_ms),
                   prefix_tokens=round(cost.prefix_tokens + share * (far.prefix_tokens - cost.prefix_tokens)),
                   longer=None)


@functools.lru_cache(maxsize=32)
def _verify_table(cost: StepCost, most: int) -> tuple[float, ...]:
    return tuple(cost.verify(k) for k in range(most + 1))


def throughput(ea: float, draft_ms: float, verify_ms: float) -> float:
    """Expected tokens per second of a step: (E(A) + 1) / (draft + verify)."""
    total = draft_ms + verify_ms
    return (ea + 1.0) * 1000.0 / total if total > 0 else float("inf")


def by_size(ranked_p_hat: list[float], draft_ms: float, cost: StepCost, max_nodes: int) -> list[float]:
    """J(n) for n = 1.. over candidates ranked best-first by p̂ and `draft_ms` of drafting:
    (Σ top-n p̂ + 1) / (draft + verify(n + 1)), at most `max_nodes` of them."""
    verify = cost.verify_table(max_nodes + 1)
    return [throughput(ea, draft_ms, verify[n + 1])
            for n, ea in enumerate(itertools.accumulate(ranked_p_hat[:max_nodes]), 1)]


def best_size(ranked_p_hat: list[float], draft_ms: float, cost: StepCost, max_nodes: int) -> tuple[int, float]:
    """The size n (and its J) with the largest expected tokens/s over finished candidates (`by_size`),
    the drafting already done; ties take fewer nodes; (0, J of no tree) when no tree beats none."""
    best = (0, throughput(0.0, draft_ms, cost.verify_table(max_nodes + 1)[1]))
    for n, j in enumerate(by_size(ranked_p_hat, draft_ms, cost, max_nodes), 1):
        if j > best[1]:
            best = (n, j)
    return best


@dataclass
class Objective:
    """One step's objective table, filled layer by layer: rows[d - 1][n - 1] = J(d, n) in tokens/s.

    `add_layer` takes the p̂ of the layer's candidates best-first (the n-node candidate is the first
    n of them) and the modelled draft time through that layer. The chosen point is the table's
    argmax (ties: fewer layers, then fewer nodes)."""

    cost: StepCost
    max_nodes: int
    rows: list[list[float]] = field(default_factory=list)
    draft_ms: list[float] = field(default_factory=list)
    best: tuple[float, int, int] = (float("-inf"), 0, 0)   # (J, depth, nodes)

    def add_layer(self, ranked_p_hat: list[float], draft_ms: float) -> bool:
        """Record the next depth; True when it raised the best J."""
        row = by_size(ranked_p_hat, draft_ms, self.cost, self.max_nodes)
        self.rows.append(row)
        self.draft_ms.append(draft_ms)
        before = self.best[0]
        depth = len(self.rows)
        for n, j in enumerate(row, 1):
            if j > self.best[0]:
                self.best = (j, depth, n)
        return self.best[0] > before

    def still_in_play(self, ranked_p_hat: list[float], last_layer_mass: list[float], confidence: float = 1.0) -> int:
        """The largest n that the next layer could make the best (0 when none can).

        The next layer's children carry at most their parents' p̂ (their q sum to ≤ 1), so it adds
        to E_d(n) at most the mass of the depth-d nodes among the best n, and it costs at least the
        cheapest measured layer. With `confidence` = 1 that is a bound: n is out of play when even
        the optimistic J stays at or below the best J so far. A confidence below 1 is an estimate
        instead: the next layer's best children are expected to keep that share of their parents'
        p̂ (the builder passes the share this layer's best children kept). Like the greedy stop this
        looks one layer ahead; it narrows the next layer's frontier to nodes some n in play could
        use, since drafting nodes no chosen tree would hold only costs time. (A tighter forecast drafts
        fewer layers but no faster: benchmarks/auto_budget.md, "Forecasting the next layer".)
        """
        best = self.best[0]
        draft = self.draft_ms[-1] + self.cost.cheapest_layer
        verify = self.cost.verify_table(self.max_nodes + 1)
        ea = list(itertools.accumulate(ranked_p_hat[: self.max_nodes]))
        top = 0
        for n in range(1, self.max_nodes + 1):
            # Beyond the candidates so far, an n-node tree holds all of them plus deeper nodes.
            i = min(n, len(ea)) - 1
            if i < 0:
                break
            e, mass = ea[i], last_layer_mass[i]
            if mass > 0 and throughput(e + confidence * mass, draft, verify[n + 1]) > best:
                top = n
            elif n > len(ea):
                break       # past the candidates only the verify cost grows: no larger n can pass
        return top

    def choose_in_last_row(self) -> int:
        """Fix the depth at the last row (a rule with its own depth) and choose only n there."""
        row = self.rows[-1] if self.rows else []
        if not row:
            self.best = (float("-inf"), 0, 0)
            return 0
        n = max(range(len(row)), key=lambda i: (row[i], -i)) + 1
        self.best = (row[n - 1], len(self.rows), n)
        return n

    @property
    def chosen(self) -> tuple[int, int]:
        """(depth, nodes) of the best candidate."""
        return self.best[1], self.best[2]

    def record(self, widths: list[int], rule: str) -> dict:
        """What the step trace keeps for "Why this shape" (tokens/s rounded for size; 0 where no candidate was
        found, so the file stays standard JSON, which has no -Infinity)."""
        depth, nodes = self.chosen
        return {"rule": rule, "objective": [[round(j, 3) for j in row] for row in self.rows],
                "draft_model_ms": [round(x, 3) for x in self.draft_ms], "widths": list(widths),
                "chosen_depth": depth, "chosen_nodes": nodes,
                "chosen_tokens_per_s": round(self.best[0], 3) if math.isfinite(self.best[0]) else 0.0}


def kept_share(tree, layer: list[int]) -> float:
    """How much of its parents' p̂ a layer's best children kept: Σ p̂(parent) · max q of its children
    over Σ p̂(parent) (the draft's confidence one layer down, weighted by how likely each parent is)."""
    best: dict[int, float] = {}
    for i in layer:
        best[tree.parents[i]] = max(best.get(tree.parents[i], 0.0), tree.q[i])
    mass = sum(tree.p_hat_of(p) for p in best)
    return sum(tree.p_hat_of(p) * q for p, q in best.items()) / mass if mass > 0 else 0.0


def layer_masses(order: list[int], depth_of: list[int], p_hat: list[float], depth: int) -> list[float]:
    """For each n: the p̂ mass of the nodes of `depth` among the first n of `order`."""
    return list(itertools.accumulate(p_hat[i] if depth_of[i] == depth else 0.0 for i in order))
