"""The drafter interface shared by every drafter: model drafts (classic LM, EAGLE-style feature head,
early exit; their shared helpers are in model_drafter.py) and training-free ones (Token Recycling's
table, prompt lookup).

A run starts with `attach` (the target's KV cache, which an early-exit drafter shares). A step goes:
`begin_step` (consume the tokens committed since last step, compute the root's child
distribution) -> `top_children` once per tree layer (what a tree builder's `expand` callback gets:
the top-k children of each node; model drafters answer it from one batched forward over that
layer's nodes, each seeing only the committed prefix and its own ancestors; `distributions` gives
the whole distributions instead, when the trace records them; `top_children_and_odds` adds the q and
rank of tokens retrieval fusion asks about)
-> `finish_tree` (the built tree's last touch: sources per node, and retrieval fusion where it is
on) -> `observe` (the target's logits for every row it scored) -> `end_step` (compact the draft
cache to what stays valid for the next step).
"""

from __future__ import annotations

import torch

from opttree.trace import BuildInfo
from opttree.trees.draft_tree import DraftTree

Odds = tuple[float, int]   # a token's draft probability q and its rank (tokens strictly more likely)


class Drafter:
    feature_layers: tuple[int, ...] = ()   # the target's hidden states begin_step reads, side by side
    source = "draft"        # what the trace calls this drafter's nodes (trace.SOURCES)
    # Whether `observe` reads the prompt's rows at prefill. Only then does the prefill compute the
    # target's logits for every prompt token; otherwise it computes none it would throw away.
    reads_prompt_rows = False
    # The stop reason of a step this drafter proposed nothing for (an empty tree); "": the builder's own.
    proposed_nothing = ""

    def __init__(self, vocab_size: int, temperature: float = 1.0):
        self.vocab_size = vocab_size  # the target's: draft logits are cut or padded to it
        self.temperature = temperature  # the tree temperature (tree_temperature.py)

    def begin_step(self, committed: list[int], features: torch.Tensor | None) -> None:
        raise NotImplementedError

    def distributions(self, tree: DraftTree, nodes: list[int]) -> torch.Tensor:
        """Draft distributions (len(nodes), vocab) over the children of each node."""
        raise NotImplementedError

    def end_step(self, accepted: list[int]) -> None:
        raise NotImplementedError

    def top_children(self, tree: DraftTree, nodes: list[int], k: int) -> tuple[torch.Tensor, torch.Tensor]:
        """What a tree builder's `expand` returns: each node's k most likely children, (tokens, q),
        both (len(nodes), k') on the CPU, sorted by q, k' <= k: one top-k per layer and one copy off
        the device. Drafters without a full distribution (a table, a trie) answer it directly."""
        return top_of(self.distributions(tree, nodes), k)

    def top_children_and_odds(self, tree: DraftTree, nodes: list[int], k: int,
                              asked: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor, list[list[Odds]]]:
        """`top_children`, and for each node i the draft's (q, rank) of every token in asked[i] (rank:
        how many tokens it finds strictly more likely): what retrieval fusion prunes its trie with.
        Here read from the whole distributions; a drafter with a faster path answers from that."""
        probs = self.distributions(tree, nodes)
        return *top_of(probs, k), odds(probs, asked)

    def finish_tree(self, tree: DraftTree, info: BuildInfo, cfg, cost=None) -> tuple[DraftTree, BuildInfo]:
        """The tree to verify, built from this drafter's proposals under the step's settings `cfg`
        (and, under the auto budget, the step's costs `cost`): here each node gets its source."""
        tree.source = [self.source] * len(tree)
        if not len(tree) and self.proposed_nothing:
            info.stop_reason = self.proposed_nothing
        return tree, info

    def attach(self, cache) -> None:
        """The target's KV cache for the run, handed over before the first step: a drafter that runs
        the target's own first layers (early exit) shares it; others ignore it."""

    def observe(self, tokens: list[int], logits: torch.Tensor) -> None:
        """The target's logits after each of `tokens` (row i follows tokens[i]): the prompt's rows at
        prefill (only for a drafter that `reads_prompt_rows`), then every row of each verification
        (root and all nodes, rejected ones included). Model drafters ignore them; Token Recycling
        learns its table from them."""


def top_of(probs: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Each row's k most likely (tokens, q), sorted by q, copied to the CPU."""
    top = torch.topk(probs, min(k, probs.shape[-1]), dim=-1)
    return top.indices.cpu(), top.values.cpu()


def odds(probs: torch.Tensor, asked: list[list[int]], column: dict[int, int] | None = None) -> list[list[Odds]]:
    """For each row i of `probs`, (q, rank) of every token in asked[i]: its probability and how many
    entries of the row are strictly larger. `column` maps a token to its column when the row holds a
    draft vocabulary's columns only (a token without one has q 0, as in the full row, where every
    other entry is 0 too); without it the column is the token id."""
    wanted = [i for i, tokens in enumerate(asked) if tokens]
    # The rows asked about, copied off the device together: one read however many nodes ask.
    held = dict(zip(wanted, probs[wanted].float().cpu())) if wanted else {}
    out = []
    for i, tokens in enumerate(asked):
        if not tokens:
            out.append([])
            continue
        row = held[i]
        found = []
        for tok in tokens:
            col = tok if column is None else column.get(tok, -1)
            q = float(row[col]) if 0 <= col < row.shape[0] else 0.0
            found.append((q, int((row > q).sum())))
        out.append(found)
    return out


class SparseDrafter(Drafter):
    """A drafter without a draft model (a table, a trie): the children `top_children` proposes are all
    it knows, and no cache needs compacting. `distributions` returns them as rows that are zero elsewhere."""

    def distributions(self, tree: DraftTree, nodes: list[int]) -> torch.Tensor:
        ids, q = self.top_children(tree, nodes, self.vocab_size)
        return torch.zeros(len(nodes), self.vocab_size).scatter_add_(1, ids, q)   # padding: q 0 at id 0

    def end_step(self, accepted: list[int]) -> None:
        pass
