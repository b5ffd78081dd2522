"""A static tree as serving engines take it: vLLM's `speculative_token_tree` and SGLang's flags.

Pure conversions (rank paths ↔ text), so the CLI (`opttree export-tree`) and the app's Serving tab
show the same strings and the tests read them back into the engine's own trees; each export method's
rank paths (`static_paths`), a recorded step's (`rank_paths`) and the most frequent shape over many
steps (`frequent_paths`, OPT-Tree's static stand-in).

- vLLM: `speculative_config = {"method", "num_speculative_tokens", "speculative_token_tree"}`,
  the tree a string of child-rank paths, "[(0,), (1,), (0, 0), …]", sorted level by level with
  ranks ascending (vLLM sorts it so too), and `num_speculative_tokens` equal to its length.
- SGLang (`--speculative-algorithm EAGLE`) takes no tree: it grows EAGLE-2's dynamic tree, S
  steps (`--speculative-num-steps`), each expanding the K best nodes by draft score with their K
  best children (`--speculative-eagle-topk`), then verifies the best N - 1 nodes by draft score
  plus the root (`--speculative-num-draft-tokens N`; with K = 1, N = S + 1). The nearest flags hold
  a static tree inside that candidate set: S = its depth, K = the most nodes it expands on one
  level or children under one node, N = its nodes + 1. Which nodes are verified is SGLang's choice
  each step, so the static shape itself is lost (`sglang_note` says so).
"""

from __future__ import annotations

import ast
import heapq
import json
import re
from collections import Counter
from dataclasses import dataclass

from opttree.trees.sequoia import optimal_tree
from opttree.trees.static import shape_paths

Path = tuple[int, ...]

# The drafter kinds whose draft vLLM has a `speculative_config` method for (None: no such method).
VLLM_METHODS = {"eagle": "eagle", "classic": "draft_model", "lookup": "ngram", "early-exit": None, "recycling": None}


def check_paths(paths) -> list[Path]:
    """The paths as tuples in level order, or ValueError unless they form a rank tree: distinct
    paths of non-negative ints, each path's parent present, and a rank-r child only beside ranks
    0..r-1 of the same parent."""
    try:
        out = [tuple(p) for p in paths]
    except TypeError:
        raise ValueError("a tree is a list of rank paths such as (0,), (0, 1)") from None
    if any(type(r) is not int for p in out for r in p):
        raise ValueError("ranks are whole numbers")
    if any(not p or min(p) < 0 for p in out):
        raise ValueError("every rank path is non-empty and its ranks are ≥ 0")
    seen = set(out)
    if len(seen) != len(out):
        raise ValueError("a rank path appears twice")
    for p in out:
        if len(p) > 1 and p[:-1] not in seen:
            raise ValueError(f"path {p} lacks its parent {p[:-1]}")
        if p[-1] > 0 and p[:-1] + (p[-1] - 1,) not in seen:
            raise ValueError(f"path {p} lacks its elder sibling {p[:-1] + (p[-1] - 1,)}")
    return sorted(out, key=lambda p: (len(p), p))


def vllm_tree(paths) -> str:
    """vLLM's `speculative_token_tree`: the paths level by level, "[(0,), (1,), (0, 0)]"."""
    return str(check_paths(paths))


def parse_vllm_tree(text: str) -> list[Path]:
    """The rank paths of a `speculative_token_tree` string, in level order (ValueError if malformed)."""
    try:
        value = ast.literal_eval(str(text))
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        raise ValueError(f"not a list of rank paths: {str(text)[:80]!r}") from None
    if not isinstance(value, (list, tuple)) or not all(isinstance(p, tuple) for p in value):
        raise ValueError("speculative_token_tree is a list of tuples, e.g. [(0,), (0, 0)]")
    return check_paths(value)


def vllm_config(paths, method: str | None) -> dict:
    """The `speculative_config` block (under that key) for a drafter's vLLM method."""
    tree = check_paths(paths)
    return {"speculative_config": {"method": method, "num_speculative_tokens": len(tree),
                                   "speculative_token_tree": str(tree)}}


def vllm_json(paths, method: str | None) -> str:
    return json.dumps(vllm_config(paths, method), indent=1)


def parse_vllm_config(text: str) -> tuple[str | None, list[Path]]:
    """(method, paths) of a `vllm_json` text; ValueError when the count disagrees with the tree."""
    try:
        spec = json.loads(text)["speculative_config"]
        method, count, tree = spec.get("method"), spec["num_speculative_tokens"], spec["speculative_token_tree"]
    except (ValueError, KeyError, TypeError, AttributeError):
        raise ValueError("not a {\"speculative_config\": {...}} JSON with a speculative_token_tree") from None
    paths = parse_vllm_tree(tree)
    if count != len(paths):
        raise ValueError(f"num_speculative_tokens is {count} but the tree has {len(paths)} nodes")
    return method, paths


def uniform_per_level(paths) -> bool:
    """True when every node of a level has as many children as every other node of that level (leaves
    included: then no node of that level has children). vLLM's EAGLE tree proposer, in the source read
    for docs/serving.md, drafts one child count per level, so only such trees are drafted as written."""
    tree = check_paths(paths)
    kids: dict[Path, int] = {p: 0 for p in tree}
    for p in tree:
        if len(p) > 1:
            kids[p[:-1]] += 1
    depth = max((len(p) for p in tree), default=0)
    return all(len({kids[p] for p in tree if len(p) == d}) <= 1 for d in range(1, depth))


@dataclass(frozen=True)
class SGLangFlags:
    steps: int          # --speculative-num-steps: draft depth
    topk: int           # --speculative-eagle-topk: nodes expanded per step and children per node
    draft_tokens: int   # --speculative-num-draft-tokens: tokens verified per step, the root included

    def args(self) -> str:
        return (f"--speculative-num-steps {self.steps} --speculative-eagle-topk {self.topk} "
                f"--speculative-num-draft-tokens {self.draft_tokens}")


def sglang_flags(paths) -> SGLangFlags:
    """The nearest SGLang EAGLE flags for a static tree (module docstring)."""
    tree = check_paths(paths)
    if not tree:
        raise ValueError("an empty tree has no SGLang flags (that is plain decoding)")
    depth = max(len(p) for p in tree)
    parents = [len({p[:-1] for p in tree if len(p) == d}) for d in range(2, depth + 1)]
    children = max(sum(1 for q in tree if q[:-1] == p[:-1]) for p in tree)
    first = sum(1 for p in tree if len(p) == 1)
    return SGLangFlags(depth, max([first, children, *parents]), len(tree) + 1)


def sglang_note(paths) -> str:
    """What the flags keep of the tree and what they lose."""
    f = sglang_flags(paths)
    return (f"SGLang grows EAGLE-2's dynamic tree instead of a fixed one: {f.steps} draft steps, each expanding "
            f"the {f.topk} best nodes with their {f.topk} best children, then it verifies the "
            f"{f.draft_tokens - 1} nodes with the best draft scores (+ the root). The depth, the width and the "
            f"node count carry over; the shape itself (which ranks sit where) is chosen per step by SGLang.")


_FLAG = {"--speculative-num-steps": "steps", "--speculative-eagle-topk": "topk",
         "--speculative-num-draft-tokens": "draft_tokens"}


def parse_sglang_args(text: str) -> SGLangFlags:
    """The three numbers of an `SGLangFlags.args()` text (other flags are ignored)."""
    found = {}
    for flag, value in re.findall(r"(--speculative-[a-z-]+)[= ]+(\d+)", str(text)):
        if flag in _FLAG:
            found[_FLAG[flag]] = int(value)
    missing = sorted(set(_FLAG.values()) - set(found))
    if missing:
        raise ValueError(f"missing SGLang flag(s) for {', '.join(missing)}")
    return SGLangFlags(**found)


EXPORT_METHODS = ("sequoia", "binary", "eagle-static", "chain", "opt-tree")


def static_paths(method: str, nodes: int, max_depth: int, acceptance=None) -> list[tuple[int, ...]]:
    """The level-order rank paths of a static method at `nodes` nodes."""
    if method == "sequoia":
        return optimal_tree(acceptance, nodes, max_depth)
    return check_paths(shape_paths(method, nodes, max_depth))


def rank_paths(step: dict) -> list[tuple[int, ...]]:
    """Each node's rank path in a recorded step (ranks from the root down)."""
    out: list[tuple[int, ...]] = []
    for parent, rank in zip(step["parents"], step["rank"]):
        out.append((out[parent] if parent >= 0 else ()) + (rank,))
    return out


def frequent_paths(counts: Counter, nodes: int) -> list[tuple[int, ...]]:
    """The `nodes` most frequent paths kept a rank tree (each path after its parent and its elder
    sibling), in level order: OPT-Tree's static stand-in from the rank paths its trees held."""
    chosen: list[tuple[int, ...]] = []
    heap = [(-counts[(0,)], (1, (0,)))]
    seen = {(0,)}
    while heap and len(chosen) < nodes:
        neg, (_, path) = heapq.heappop(heap)
        if neg == 0:
            break
        chosen.append(path)
        for nxt in (path + (0,), path[:-1] + (path[-1] + 1,)):
            if nxt not in seen:
                seen.add(nxt)
                heapq.heappush(heap, (-counts[nxt], (len(nxt), nxt)))
    return check_paths(chosen)
