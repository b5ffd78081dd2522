"""Retrieval by n-gram matching: what followed the text's last few tokens, earlier in the text or in a corpus.

Shared by prompt lookup (drafters/lookup.py) and retrieval fusion (drafters/fusion.py). The last n
committed tokens (n = 3, else 2, else 1: the longest n that occurs earlier) are searched in the
prompt and the output so far, newest occurrence first, then in the corpus (a user's file, command
line only); the tokens that followed each occurrence are its continuation. The continuations form a
trie (a DraftTree rooted at the last committed token): shared prefixes are one node, and a node's q
is the weighted share of the continuations through its parent that go on through it (weights favour
recent matches: 1, 1/2, 1/3, ...). q here is match evidence, not a probability of acceptance.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from opttree.errors import BadInput
from opttree.trees.draft_tree import ROOT, DraftTree

MAX_N = 3                            # longest n-gram matched
MAX_CORPUS_BYTES = 4 * 1024 * 1024   # a retrieval corpus file (searched every step: kept modest)


def occurrences(seq: np.ndarray, gram: tuple[int, ...]) -> np.ndarray:
    """Start positions of `gram` in `seq`, ascending."""
    n, m = len(gram), len(seq)
    if n == 0 or m < n:
        return np.empty(0, dtype=np.int64)
    hit = seq[: m - n + 1] == gram[0]
    for j in range(1, n):
        hit &= seq[j: m - n + 1 + j] == gram[j]
    return np.flatnonzero(hit)


@dataclass
class Retrieved:
    tree: DraftTree = field(default_factory=DraftTree)   # the continuation trie (q = share of matches)
    n: int = 0                                            # the n-gram length that matched (0: none)
    matches: int = 0                                      # continuations used
    node_of: dict = field(default_factory=lambda: {(): ROOT})   # token path from the root -> node id
    kids: dict = field(default_factory=lambda: {ROOT: []})      # node id -> child ids, best first

    def children_of_path(self, path: tuple[int, ...]) -> list[int]:
        node = self.node_of.get(path)
        return [] if node is None else self.kids[node]


def continuations(committed: list[int], corpus: np.ndarray | None, length: int, limit: int,
                  max_n: int = MAX_N) -> tuple[int, list[list[int]]]:
    """(n, continuations): up to `limit` continuations of at most `length` tokens after earlier
    occurrences of the last n committed tokens, for the longest n <= max_n that has any; the text's
    own occurrences come first (newest first), then the corpus's (in file order)."""
    seq = np.asarray(committed, dtype=np.int64)
    for n in range(min(max_n, len(seq)), 0, -1):
        gram = tuple(int(t) for t in seq[-n:])
        found: list[list[int]] = []
        starts = occurrences(seq[:-1], gram)          # an occurrence must be followed by a token
        for s in starts[::-1][:limit]:
            found.append(seq[s + n: s + n + length].tolist())
        if corpus is not None and len(found) < limit:
            for s in occurrences(corpus[:-1], gram)[: limit - len(found)]:
                found.append(corpus[s + n: s + n + length].tolist())
        if found:
            return n, found
    return 0, []


def continuation_tree(conts: list[list[int]]) -> Retrieved:
    """The trie of `conts` (the i-th weighted 1/(i+1)), nodes in breadth-first order, siblings by weight."""
    weight: dict[tuple, float] = {(): 0.0}
    children: dict[tuple, list[tuple]] = {(): []}
    for i, cont in enumerate(conts):
        if not cont:
            continue
        w = 1.0 / (i + 1)
        weight[()] += w
        for d in range(1, len(cont) + 1):
            path = tuple(cont[:d])
            if path not in weight:
                weight[path] = 0.0
                children[path] = []
                children[path[:-1]].append(path)
            weight[path] += w
    out = Retrieved(matches=sum(1 for c in conts if c))
    frontier = [()]
    while frontier:
        nxt = []
        for parent in frontier:
            ranked = sorted(children[parent], key=lambda c: -weight[c])   # stable: earlier match first on ties
            for rank, child in enumerate(ranked):
                q = min(1.0, weight[child] / weight[parent])
                node = out.tree.add(out.node_of[parent], child[-1], q, rank)
                out.node_of[child] = node
                out.kids[out.node_of[parent]].append(node)
                out.kids[node] = []
                nxt.append(child)
        frontier = nxt
    return out


def retrieve(committed: list[int], corpus: np.ndarray | None, length: int, limit: int) -> Retrieved:
    n, conts = continuations(committed, corpus, length, limit)
    out = continuation_tree(conts)
    out.n = n
    return out


def check_corpus_file(path: str) -> Path:
    """The corpus file's path, or BadInput saying why it cannot serve (checked before models load)."""
    p = Path(path)
    try:
        size = p.stat().st_size
    except OSError as exc:
        raise BadInput(f"cannot read the retrieval corpus {path}: {exc.strerror or exc}") from None
    if not p.is_file():
        raise BadInput(f"the retrieval corpus {path} is not a file.")
    if size > MAX_CORPUS_BYTES:
        raise BadInput(f"the retrieval corpus {path} is {size / 2**20:.1f} MB; the limit is "
                       f"{MAX_CORPUS_BYTES // 2**20} MB.")
    return p


def load_corpus(path: str, tokenizer) -> np.ndarray:
    """A retrieval corpus: a UTF-8 text file, tokenized once (no special tokens)."""
    p = check_corpus_file(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(f"cannot read the retrieval corpus {path} as UTF-8 text: {exc}") from None
    if not text.strip():
        raise BadInput(f"the retrieval corpus {path} is empty.")
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    return np.asarray(ids, dtype=np.int64)
