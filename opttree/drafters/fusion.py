"""Retrieval fusion around a model drafter (`--retrieval on`): RASD's pruning and tree fusion.

The wrapped drafter builds its tree exactly as without retrieval. Around it:
- `begin_step` retrieves continuations of the last committed tokens from the prompt, the output so
  far and the corpus (drafters/retrieval.py) and builds their trie;
- `top_children` (and `distributions`, when the trace records whole rows) asks the model drafter for
  each expanded node's children as usual and notes the draft probability (and rank) of every retrieved
  token whose parent it expanded: the numbers that prune the retrieval trie. A layer with no retrieved
  child takes the drafter's plain fast path; one with some asks `top_children_and_odds`, which the
  feature head answers from its draft-vocabulary rows (a full-vocabulary row per node would cost it
  more than the layer's forward);
- `finish_tree` fuses the builder's tree with the retrieval trie (trees/fusion.py) within the step's
  node budget (under the auto budget: the size with the largest expected tokens/s over the fused
  candidates, `sized_by_objective`) and depth; the target verifies the fused tree in one forward like any other.
"""

from __future__ import annotations

import numpy as np
import torch

from opttree.config import AUTO_MAX_NODES
from opttree.drafters.base import Drafter, Odds, odds
from opttree.drafters.retrieval import Retrieved, retrieve
from opttree.trace import BuildInfo, counted
from opttree.trees.auto_size import best_size
from opttree.trees.draft_tree import ROOT, DraftTree
from opttree.trees.fusion import cut, fuse

FUSION_MATCHES = 8   # retrieved continuations per step


class RetrievalFusion(Drafter):
    def __init__(self, inner: Drafter, length: int, corpus: np.ndarray | None = None, matches: int = FUSION_MATCHES):
        super().__init__(inner.vocab_size, inner.temperature)
        self.inner, self.length, self.corpus, self.matches = inner, length, corpus, matches
        self.feature_layers, self.reads_prompt_rows = inner.feature_layers, inner.reads_prompt_rows
        self.found = Retrieved()
        self.draft_q: dict[tuple, tuple[float, int]] = {}
        self.expanded: dict[tuple, int] = {}

    def begin_step(self, committed: list[int], features=None) -> None:
        self.inner.begin_step(committed, features)
        self.found = retrieve(committed, self.corpus, self.length, self.matches)
        self.draft_q, self.expanded = {}, {}

    def _asked(self, tree: DraftTree, nodes: list[int]) -> tuple[list[tuple], list[list[int]]]:
        """Each node's token path (noted as expanded) and the retrieved tokens that continue it."""
        paths, asked, trie = [], [], self.found.tree
        for node in nodes:
            path = () if node == ROOT else tuple(tree.tokens[a] for a in tree.path(node))
            if node != ROOT:
                self.expanded[path] = node
            paths.append(path)
            asked.append([trie.tokens[child] for child in self.found.children_of_path(path)])
        return paths, asked

    def _note(self, paths: list[tuple], asked: list[list[int]], found: list[list[Odds]]) -> None:
        for path, tokens, odds_ in zip(paths, asked, found):
            for tok, q_rank in zip(tokens, odds_):
                self.draft_q[path + (tok,)] = q_rank

    def top_children(self, tree: DraftTree, nodes: list[int], k: int):
        paths, asked = self._asked(tree, nodes)
        if not any(asked):
            return self.inner.top_children(tree, nodes, k)
        tokens, q, found = self.inner.top_children_and_odds(tree, nodes, k, asked)
        self._note(paths, asked, found)
        return tokens, q

    def distributions(self, tree: DraftTree, nodes: list[int]) -> torch.Tensor:
        paths, asked = self._asked(tree, nodes)
        probs = self.inner.distributions(tree, nodes)
        self._note(paths, asked, odds(probs, asked))
        return probs

    def finish_tree(self, tree: DraftTree, info: BuildInfo, cfg, cost=None) -> tuple[DraftTree, BuildInfo]:
        tree, info = self.inner.finish_tree(tree, info, cfg, cost)
        drafted = (info.auto or {}).get("draft_model_ms")
        sized = cfg.auto_nodes and cost is not None and self.found.n and drafted
        # Fixed n: fused at n. Auto: fused at the ceiling, then cut to the best size (`sized_by_objective`);
        # auto without retrieved continuations, costs or drafting: fused at the draft tree's own size.
        budget = AUTO_MAX_NODES if sized else (cfg.nodes if not cfg.auto_nodes else len(tree))
        fused, notes = fuse(tree, self.found.tree, self.draft_q, budget, self.expanded, max_depth=cfg.max_depth)
        if sized:
            fused, notes, rate = self.sized_by_objective(fused, notes, len(tree), drafted[-1], cost)
            if rate is not None:        # "Why this shape" and the step metrics show the fused choice too
                info.auto.update(fused_nodes=len(fused), fused_tokens_per_s=round(rate, 3))
        if self.found.n:
            note = (f"retrieval: {counted(self.found.matches, 'match', 'matches')} of the last "
                    f"{counted(self.found.n, 'token')}, {notes['pruned']} pruned by the draft, "
                    f"{counted(notes['retrieved'], 'node')} added, {notes['both']} shared")
        else:
            note = "retrieval: no earlier occurrence of the last token"
        info.note(note, sep=" · ")
        return fused, info

    @staticmethod
    def sized_by_objective(wide: DraftTree, notes: dict, own: int, draft_ms: float, cost):
        """Under the auto budget, the fused tree at the size whose expected tokens/s is largest over the
        fused candidates (`auto_size.best_size`: their p̂ as fused, the drafting the step did, this
        step's verify cost), so retrieved continuations can make a larger tree pay where the draft's
        own candidates did not; the draft tree's own size (`own`) and no rate when no size beats
        verifying no tree."""
        n, rate = best_size(sorted(wide.p_hat, reverse=True), draft_ms, cost, AUTO_MAX_NODES)
        fused, notes = cut(wide, notes, n or own)
        return fused, notes, (rate if n else None)

    def attach(self, cache) -> None:
        self.inner.attach(cache)

    def observe(self, tokens: list[int], logits: torch.Tensor) -> None:
        self.inner.observe(tokens, logits)

    def end_step(self, accepted: list[int]) -> None:
        self.inner.end_step(accepted)
