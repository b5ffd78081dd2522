"""A static tree as serving engines take it: vLLM's `--speculative-config` and SGLang's flags.

Pure conversions (rank paths ↔ text), so the CLI (`opttree export-tree`) and the app's Serving tab
show the same strings with the same notes (`engine_export`), and the tests read them back into the
engine's own trees; each export method's rank paths (`static_paths`), a recorded step's
(`rank_paths`) and the most frequent shape over many steps (`frequent_paths`, OPT-Tree's static
stand-in).

vLLM (source read 2026-11-29; docs/serving.md):
- ≥ 0.21 (format "vllm"): PR #42121 ("[Attention][Cleanup] Remove tree attention") removed
  `speculative_token_tree`, and `SpeculativeConfig` forbids extra keys (vllm/config/utils.py), so
  vLLM verifies a chain: `{"method", "num_speculative_tokens": the tree's depth}`.
- ≤ 0.20 (format "vllm-tree"): `speculative_token_tree`, the child-rank paths level by level, ranks
  ascending (vllm/config/speculative.py sorts it so), `num_speculative_tokens` its length. Drafted
  only by the EAGLE proposer's `propose_tree` (vllm/v1/spec_decode/llm_base_proposer.py: it feeds
  hidden states to the draft) under the TREE_ATTN attention backend (never chosen on its own: the flag
  `--attention-backend TREE_ATTN` from PR #26315 on, the environment variable
  VLLM_ATTENTION_BACKEND=TREE_ATTN in 0.11 and earlier, whose backend selector reads only that), one
  child count per level (the level's drafts // the level above's), so only a tree whose nodes on a
  level have equal numbers of children (`uniform_per_level`) is drafted as written; its rejection
  sampler (vllm/v1/sample/rejection_sampler.py) compares the drafted tokens position by position.
SGLang (`--speculative-algorithm EAGLE` for a feature head, STANDALONE for a classic draft) takes no
tree: it grows EAGLE-2's dynamic tree, S steps (`--speculative-num-steps`), each expanding the K best
nodes by draft score with their K best children (`--speculative-eagle-topk`), then verifies the best
N - 1 nodes by draft score plus the root (`--speculative-num-draft-tokens N`; with K = 1, N = S + 1).
The nearest flags hold a static tree inside that candidate set: S = its depth, K = the most nodes it
expands on one level or children under one node, N = its nodes + 1. A top-k above 1 needs an attention
backend that drafts trees (`TREE_BACKENDS`). NGRAM (prompt lookup) takes N and its trie's breadth
(`--speculative-ngram-max-bfs-breadth`): SGLang copies the breadth into its top-k and, unless given,
sets S = N // breadth (python/sglang/srt/arg_groups/speculative_hook.py, `_handle_ngram`). EAGLE and
STANDALONE load the draft from `--speculative-draft-model-path` (a local folder or a hub id;
python/sglang/srt/server_args.py).
"""

from __future__ import annotations

import ast
import heapq
import json
import re
import shlex
from collections import Counter
from dataclasses import dataclass

from opttree.errors import BadInput
from opttree.trace import counted
from opttree.trees.sequoia import optimal_tree
from opttree.trees.static import shape_paths

Path = tuple[int, ...]

# The formats `export-tree --format` takes and the Serving tab shows, each with the engine it is for.
EXPORT_FORMATS = {"vllm": "vLLM ≥ 0.21 (a chain)", "vllm-tree": "vLLM ≤ 0.20 (speculative_token_tree)",
                  "sglang": "SGLang"}
# The drafter kinds whose draft vLLM has a `speculative_config` method for (None: no such method).
VLLM_METHODS = {"eagle": "eagle", "classic": "draft_model", "lookup": "ngram", "early-exit": None, "recycling": None}
VLLM_DRAFT_METHODS = ("eagle", "draft_model")   # the methods whose draft vLLM loads from `model`
VLLM_TREE_METHODS = ("eagle",)      # vLLM ≤ 0.20 drafts a token tree with these only (propose_tree)
# SGLang's --speculative-algorithm for each drafter kind (None: SGLang has none for it).
SGLANG_ALGORITHMS = {"eagle": "EAGLE", "classic": "STANDALONE", "lookup": "NGRAM", "early-exit": None,
                     "recycling": None}
# SGLang's top-k above 1 (a drafted tree) by attention backend: its backend table
# (docs.sglang.io/advanced_features/attention_backend.html, "Spec topk>1") and the start-up checks in
# python/sglang/srt/arg_groups/speculative_hook.py (trtllm_mha refused; page size > 1 only on these three).
TREE_BACKENDS = ("SGLang's table lists flashinfer, fa3 and triton for it (aiter on ROCm); trtllm_mha refuses it at "
                 "start-up, and a --page-size above 1 leaves only those three")


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


def _nonempty(paths) -> list[Path]:
    tree = check_paths(paths)
    if not tree:
        raise BadInput("an empty tree has no serving config (that is plain decoding)")
    return tree


def vllm_refusal(paths, method: str | None, tree: bool, kind: str | None = None) -> str | None:
    """Why vLLM cannot take this export (module docstring), or None: no method for the (`kind`) drafter,
    and for the tree form (vLLM ≤ 0.20) a method without a tree path or a tree its proposer cannot draft."""
    if method is None:
        who = f"the {kind} drafter" if kind else "this drafter"
        return (f"vLLM has no speculative method for {who} (it serves eagle, draft_model and ngram drafts): "
                "pass --drafter for the draft you serve")
    if tree and method not in VLLM_TREE_METHODS:
        return (f"vLLM ≤ 0.20 drafts a speculative_token_tree only with method 'eagle' (its EAGLE proposer's "
                f"propose_tree), not {method!r}: use --format vllm (a chain) or sglang")
    if tree and not uniform_per_level(paths):
        return ("vLLM ≤ 0.20 drafts one child count per level (the level's drafts divided by the level above's), "
                "and this tree's nodes on one level have different numbers of children, so it cannot be drafted "
                "as written: use --format vllm (a chain) or sglang, or a tree with even levels (a chain, or a binary "
                "tree of whole levels: 2, 6, 14, 30, 62 … nodes)")
    return None


def vllm_config(paths, method: str | None, tree: bool = False, kind: str | None = None,
                draft: str | None = None) -> dict:
    """The `--speculative-config` object: a chain as deep as the tree (vLLM ≥ 0.21), or with `tree` the
    tree itself as `speculative_token_tree` (vLLM ≤ 0.20); with `draft` (where a draft vLLM can load is) its
    `model` for the methods that load one. BadInput where vLLM cannot take it (`vllm_refusal`)."""
    paths = _nonempty(paths)
    why = vllm_refusal(paths, method, tree, kind)
    if why:
        raise BadInput(why)
    # SpeculativeConfig's `model`: without it vLLM refuses eagle and draft_model ("num_speculative_tokens
    # was provided but without speculative model"); ngram loads none.
    model = {"model": draft} if draft and method in VLLM_DRAFT_METHODS else {}
    if not tree:
        return {"method": method, **model, "num_speculative_tokens": max(len(p) for p in paths)}
    return {"method": method, **model, "num_speculative_tokens": len(paths), "speculative_token_tree": str(paths)}


def vllm_json(paths, method: str | None, tree: bool = False, kind: str | None = None,
              draft: str | None = None) -> str:
    """`vllm_config` on one line, as `--speculative-config` takes it (the notes quote it for the shell)."""
    return json.dumps(vllm_config(paths, method, tree, kind, draft))


def parse_vllm_config(text: str) -> tuple[str | None, list[Path]]:
    """(method, paths) of a `--speculative-config` JSON object: its `speculative_token_tree`, else the chain
    of `num_speculative_tokens`. ValueError when malformed or when the count disagrees with the tree."""
    try:
        spec = json.loads(text)
        method, count, tree = spec.get("method"), spec["num_speculative_tokens"], spec.get("speculative_token_tree")
    except (ValueError, KeyError, TypeError, AttributeError):
        raise ValueError("not a speculative config JSON object with num_speculative_tokens") from None
    if tree is None:
        if type(count) is not int or count < 1:
            raise ValueError(f"num_speculative_tokens is {count!r}, not a positive whole number")
        return method, [(0,) * d for d in range(1, count + 1)]
    paths = parse_vllm_tree(tree)
    if count != len(paths):
        raise ValueError(f"num_speculative_tokens is {count} but the tree has {len(paths)} nodes")
    return method, paths


def uniform_per_level(paths) -> bool:
    """True when every node of a level has as many children as every other node of that level (leaves
    included: then no node of that level has children): the trees vLLM ≤ 0.20's EAGLE tree proposer
    drafts as written (module docstring)."""
    tree = check_paths(paths)
    kids: dict[Path, int] = {p: 0 for p in tree}
    for p in tree:
        if len(p) > 1:
            kids[p[:-1]] += 1
    depth = max((len(p) for p in tree), default=0)
    return all(len({kids[p] for p in tree if len(p) == d}) <= 1 for d in range(1, depth))


@dataclass(frozen=True)
class SGLangFlags:
    steps: int | None   # --speculative-num-steps: draft depth (None for NGRAM, which derives it)
    topk: int           # --speculative-eagle-topk (NGRAM: --speculative-ngram-max-bfs-breadth)
    draft_tokens: int   # --speculative-num-draft-tokens: tokens verified per step, the root included
    algorithm: str = "EAGLE"

    def args(self, draft: str | None = None) -> str:
        """The flags; `draft`: where SGLang loads the draft from (--speculative-draft-model-path), if known."""
        head = f"--speculative-algorithm {self.algorithm} "
        if draft and self.algorithm != "NGRAM":   # NGRAM loads no draft
            head += f"--speculative-draft-model-path {shlex.quote(draft)} "
        if self.algorithm == "NGRAM":
            return head + (f"--speculative-num-draft-tokens {self.draft_tokens} "
                           f"--speculative-ngram-max-bfs-breadth {self.topk}")
        return head + (f"--speculative-num-steps {self.steps} --speculative-eagle-topk {self.topk} "
                       f"--speculative-num-draft-tokens {self.draft_tokens}")


def sglang_algorithm(kind: str) -> str:
    """SGLang's --speculative-algorithm for a drafter kind, or BadInput where SGLang has none."""
    algorithm = SGLANG_ALGORITHMS.get(kind)
    if algorithm is None:
        raise BadInput(f"SGLang has no speculative algorithm for the {kind} drafter (EAGLE takes a feature head, "
                       f"STANDALONE a classic draft, NGRAM prompt lookup): pass --drafter for the draft you serve")
    return algorithm


def sglang_flags(paths, kind: str = "eagle") -> SGLangFlags:
    """The nearest SGLang flags for a static tree and the drafter kind (module docstring)."""
    tree = _nonempty(paths)
    algorithm = sglang_algorithm(kind)
    depth = max(len(p) for p in tree)
    parents = [len({p[:-1] for p in tree if len(p) == d}) for d in range(2, depth + 1)]
    children = max(sum(1 for q in tree if q[:-1] == p[:-1]) for p in tree)
    first = sum(1 for p in tree if len(p) == 1)
    return SGLangFlags(None if algorithm == "NGRAM" else depth, max([first, children, *parents]), len(tree) + 1,
                       algorithm)


def sglang_note(paths, kind: str = "eagle") -> str:
    """What the flags keep of the tree and what they lose."""
    f = sglang_flags(paths, kind)
    if f.algorithm == "NGRAM":
        width = "" if f.topk == 1 else " With --page-size above 1 only the flashinfer backend takes a breadth above 1."
        return (f"SGLang's NGRAM drafts from a trie of the text so far, not from a model: it verifies "
                f"{counted(f.draft_tokens - 1, 'drafted token')} (+ the root) a step, at most "
                f"{counted(f.topk, 'branch', 'branches')} per level of the trie. SGLang sets --speculative-eagle-topk "
                f"to that breadth itself and, with no --speculative-num-steps given, the steps to {f.draft_tokens} // "
                f"{f.topk} = {f.draft_tokens // f.topk}. The node count and the width carry over, not the shape."
                + width)
    steps = f"{f.steps} draft step{'' if f.steps == 1 else 's'}"
    if f.topk == 1:     # SGLang's top-k 1 drafts the draft's top-token chain: a chain's shape exactly
        return (f"SGLang drafts a chain with top-k 1: {steps}, the draft's top token at each, verified with the "
                f"root ({f.draft_tokens} tokens). The tree is that chain, so its shape carries over whole.")
    draft = {"EAGLE": "EAGLE-2's dynamic tree", "STANDALONE": "EAGLE-2's dynamic tree from the classic draft"}
    grow = (f": the root's {f.topk} best children" if f.steps == 1 else
            f", each expanding the {f.topk} best nodes with their {f.topk} best children")
    return (f"SGLang grows {draft[f.algorithm]} instead of a fixed one: {steps}{grow}, then it verifies the "
            f"{f.draft_tokens - 1} nodes with the best draft scores (+ the root). The depth, the width and the "
            f"node count carry over; the shape itself (which ranks sit where) is chosen per step by SGLang. "
            f"A top-k above 1 needs an attention backend that drafts trees: {TREE_BACKENDS}.")


_FLAG = {"--speculative-num-steps": "steps", "--speculative-eagle-topk": "topk",
         "--speculative-ngram-max-bfs-breadth": "topk", "--speculative-num-draft-tokens": "draft_tokens"}


def parse_sglang_args(text: str) -> SGLangFlags:
    """The numbers (and the algorithm, default EAGLE) of an `SGLangFlags.args()` text; other flags are ignored."""
    found: dict = {}
    for flag, value in re.findall(r"(--speculative-[a-z-]+)[= ]+(\d+)", str(text)):
        if flag in _FLAG:
            found[_FLAG[flag]] = int(value)
    algorithm = re.search(r"--speculative-algorithm[= ]+([A-Z0-9_]+)", str(text))
    found["algorithm"] = algorithm.group(1) if algorithm else "EAGLE"
    if found["algorithm"] == "NGRAM":
        found.setdefault("steps", None)
    missing = sorted(set(_FLAG.values()) - set(found))
    if missing:
        raise ValueError(f"missing SGLang flag(s) for {', '.join(missing)}")
    return SGLangFlags(**found)


@dataclass(frozen=True)
class Export:
    text: str           # what the engine takes: the config JSON or the flags (the CLI's stdout)
    notes: list[str]    # what it keeps, what it loses and how to pass it (the CLI's stderr)


# Why an engine's draft location is left for the user where export-tree could not fill it (both engines' notes).
_UNFILLED = ("(this project's drafts are in its own format; export-tree fills it from a draft flag naming a hub id "
             "or a model folder)")


def _vllm_notes(paths, text: str, method: str, tree: bool, filled: bool, serve: str) -> list[str]:
    """What the config keeps and how to pass it: the last note ends with the `vllm serve` line, `serve` the target
    in it. The JSON `text` goes in single quotes; where it holds a `'` itself (a draft folder's path), the line
    spells it out quoted for the shell, as SGLang's draft path is."""
    depth = max(len(p) for p in paths)
    model = (f'Complete it with "model": the path of a draft vLLM can load {_UNFILLED}. '
             if method in VLLM_DRAFT_METHODS and not filled else "")
    quoted = shlex.quote(text)
    flag = "--speculative-config " + (quoted if quoted != f"'{text}'" else "'<this JSON>'")
    if not tree:
        return [f"vLLM ≥ 0.21 verifies a chain (PR #42121 removed its tree attention): "
                f"{counted(depth, 'draft token')} a step, the tree's depth. The tree's shape is carried by SGLang "
                f"(--format sglang); vLLM ≤ 0.20 took a tree (--format vllm-tree).",
                f"{model}Pass it as: vllm serve {serve} {flag}"]
    return ["For vLLM ≤ 0.20 only (0.21 removed speculative_token_tree and refuses the key). Its rejection "
            "sampler compares the drafted tokens position by position, as a chain (a tree-aware one, PR #22752, "
            "was not merged), so the tree's branches are drafted but not verified as branches.",
            f"vLLM never picks the TREE_ATTN backend on its own, so the line names it (--attention-backend, from "
            f"PR #26315 on; vLLM 0.11 and earlier take VLLM_ATTENTION_BACKEND=TREE_ATTN in the environment "
            f"instead). {model}Pass it as: vllm serve {serve} --attention-backend TREE_ATTN {flag}"]


def _sglang_notes(paths, kind: str, filled: bool, serve: str) -> list[str]:
    draft = (f" --speculative-draft-model-path <a draft SGLang can load> {_UNFILLED}"
             if SGLANG_ALGORITHMS.get(kind) != "NGRAM" and not filled else "")
    return [sglang_note(paths, kind),
            f"Pass them as python -m sglang.launch_server --model-path {serve} <these flags>{draft}."]


def engine_export(paths, fmt: str, kind: str, draft: str | None = None, target: str | None = None) -> Export:
    """The config `fmt` (EXPORT_FORMATS) for these rank paths and drafter kind, with its notes; BadInput
    where the engine cannot take it (no method for the drafter, or a tree vLLM ≤ 0.20 cannot draft).
    `draft`: where an engine can load the draft (vLLM's `model`, SGLang's --speculative-draft-model-path);
    None leaves a note saying what to add. `target`: where it loads the target, in the notes' command lines
    (quoted for the shell); None leaves `<target>` there."""
    if fmt not in EXPORT_FORMATS:
        raise BadInput(f"unknown format {fmt!r}: choose one of {', '.join(EXPORT_FORMATS)}")
    serve = shlex.quote(target) if target else "<target>"
    if fmt == "sglang":
        return Export(sglang_flags(paths, kind).args(draft), _sglang_notes(paths, kind, bool(draft), serve))
    method, tree = VLLM_METHODS.get(kind), fmt == "vllm-tree"
    text = vllm_json(paths, method, tree, kind, draft)
    return Export(text, _vllm_notes(check_paths(paths), text, method, tree, bool(draft), serve))


def held_note(method: str, asked: int, paths, max_depth: int) -> str | None:
    """Said when a shape holds fewer nodes than asked for (a chain stops at the max depth, EAGLE-25 at 25)."""
    if len(paths) >= asked:
        return None
    why = "EAGLE-25 is a fixed 25-node tree" if method == "eagle-static" else f"capped by the max depth {max_depth}"
    return f"the {method} shape holds {len(paths)} of the {asked} nodes asked for ({why})."


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
