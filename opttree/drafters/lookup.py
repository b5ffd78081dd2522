"""Prompt lookup: the simplest retrieval drafter, no draft model (like transformers'
`prompt_lookup_num_tokens`, which proposes one chain).

Each step the last n committed tokens (n = 3 down to 1) are matched against the prompt and the output
so far (and a `--retrieval-corpus` file when given); what followed the newest matches is proposed:
a chain when they agree, a small tree when they continue differently (drafters/retrieval.py builds
the trie). A node's q is the recency-weighted share of the matches through its parent that continue
with its token, so p̂ is match evidence, not a calibrated chance of acceptance. No match: an empty
tree, and the step is one plain target token.
"""

from __future__ import annotations

import numpy as np
import torch

from opttree.drafters.base import SparseDrafter
from opttree.drafters.retrieval import Retrieved, retrieve
from opttree.trees.draft_tree import ROOT, DraftTree

LOOKUP_MATCHES = 4   # matches used per step (a small tree at most)


class LookupDrafter(SparseDrafter):
    source = "retrieved"
    proposed_nothing = "no earlier occurrence of the last tokens: nothing to propose, the target adds one token"

    def __init__(self, vocab_size: int, length: int, corpus: np.ndarray | None = None,
                 matches: int = LOOKUP_MATCHES):
        super().__init__(vocab_size)
        self.length, self.corpus, self.matches = length, corpus, matches
        self.found = Retrieved()

    def begin_step(self, committed: list[int], features=None) -> None:
        self.found = retrieve(committed, self.corpus, self.length, self.matches)

    def top_children(self, tree: DraftTree, nodes: list[int], k: int):
        rows = []
        for node in nodes:
            path = () if node == ROOT else tuple(tree.tokens[a] for a in tree.path(node))
            rows.append(self.found.children_of_path(path)[:k])
        width = max(1, max(len(r) for r in rows))
        ids = torch.zeros(len(nodes), width, dtype=torch.long)
        q = torch.zeros(len(nodes), width)
        trie = self.found.tree
        for i, row in enumerate(rows):
            for j, child in enumerate(row):
                ids[i, j], q[i, j] = trie.tokens[child], trie.q[child]
        return ids, q
