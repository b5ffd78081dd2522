"""The drafter interface shared by every drafter: model drafts (classic LM, EAGLE-style feature head)
and training-free ones (Token Recycling's table, prompt lookup).

A run starts with `attach` (the target's KV cache, which an early-exit drafter shares). A step goes:
`begin_step` (consume the tokens committed since last step, compute the root's child
distribution) -> `top_children` once per tree layer (the top-k children of each node; model drafters
answer it from one batched forward over that layer's nodes, each seeing only the committed prefix
and its own ancestors; `expand` gives the whole distributions instead, when the trace records them)
-> `finish_tree` (the built tree's last touch: sources per node, and retrieval fusion where it is
on) -> `observe` (the target's logits for every row it scored) -> `end_step` (compact the draft
cache to what stays valid for the next step).
"""

from __future__ import annotations

import torch

from opttree.decoding.tree_attention import tree_mask
from opttree.trees.draft_tree import ROOT, DraftTree


class Drafter:
    feature_layers: tuple[int, ...] = ()   # the target's hidden states begin_step reads, side by side
    source = "draft"        # what the trace calls this drafter's nodes (trace.SOURCES)

    def __init__(self, vocab_size: int, temperature: float = 1.0):
        self.vocab_size = vocab_size  # the target's: draft logits are cut or padded to it
        self.temperature = temperature  # the tree temperature (tree_temperature.py)
        self.slot: dict[int, int] = {}
        self.root_probs: torch.Tensor | None = None
        self.root_pos = 0

    def begin_step(self, committed: list[int], features: torch.Tensor | None) -> None:
        raise NotImplementedError

    def expand(self, tree: DraftTree, nodes: list[int]) -> torch.Tensor:
        """Draft distributions (len(nodes), vocab) over the children of each node."""
        raise NotImplementedError

    def end_step(self, accepted: list[int]) -> None:
        raise NotImplementedError

    def top_children(self, tree: DraftTree, nodes: list[int], k: int) -> tuple[torch.Tensor, torch.Tensor]:
        """What a tree builder's `expand` returns: each node's k most likely children, (tokens, q),
        both (len(nodes), k') on the CPU, sorted by q, k' <= k: one top-k per layer and one copy off
        the device. Drafters without a full distribution (a table, a trie) answer it directly."""
        probs = self.expand(tree, nodes)
        top = torch.topk(probs, min(k, probs.shape[-1]), dim=-1)
        return top.indices.cpu(), top.values.cpu()

    def finish_tree(self, tree: DraftTree, info: dict, cfg) -> tuple[DraftTree, dict]:
        """The tree to verify, built from this drafter's proposals under the step's settings `cfg`:
        here each node gets its source."""
        tree.source = [self.source] * len(tree)
        return tree, info

    def attach(self, cache) -> None:
        """The target's KV cache for the run, handed over before the first step: a drafter that runs
        the target's own first layers (early exit) shares it; others ignore it."""

    def observe(self, tokens: list[int], logits: torch.Tensor) -> None:
        """The target's logits after each of `tokens` (row i follows tokens[i]): the prompt's rows at
        prefill, then every row of each verification (root and all nodes, rejected ones included).
        Model drafters ignore them; Token Recycling learns its table from them."""

    # -- shared helpers -------------------------------------------------------------------------
    def probs(self, logits: torch.Tensor) -> torch.Tensor:
        """Softmax at the tree temperature: these probabilities only shape the tree (p̂, E(A), the δ
        rule); losslessness comes from the verifier, so any draft distribution is allowed here."""
        logits = logits.float() / self.temperature
        v = logits.shape[-1]
        if v > self.vocab_size:
            logits = logits[..., : self.vocab_size]
        elif v < self.vocab_size:
            pad = logits.new_full((*logits.shape[:-1], self.vocab_size - v), float("-inf"))
            logits = torch.cat([logits, pad], dim=-1)
        return torch.softmax(logits, dim=-1)

    def layer_inputs(self, tree: DraftTree, nodes: list[int], prefix_len: int, cache_len: int,
                     dtype, device):
        """Positions and the ancestor-only mask for forwarding `nodes` after `cache_len` keys.

        Every node's ancestors were forwarded in earlier layers (a node is only expanded after its
        parent), so their cache slots are known; the root lives in the committed prefix.
        """
        visible = []
        for i, node in enumerate(nodes):
            ancestors = tree.path(node)[:-1]
            visible.append([self.slot[a] for a in ancestors] + [cache_len + i])
            self.slot[node] = cache_len + i
        mask = tree_mask(prefix_len, cache_len + len(nodes), visible, dtype, device)
        positions = torch.tensor([[self.root_pos + tree.depth[n] for n in nodes]], device=device)
        return positions, mask

    def asks_for_root(self, nodes: list[int]) -> bool:
        """True when the call asks for the root's children (answered from begin_step)."""
        if nodes == [ROOT]:
            return True
        if ROOT in nodes:
            raise ValueError("the root is expanded on its own")
        return False


class SparseDrafter(Drafter):
    """A drafter without a draft model (a table, a trie): the children `top_children` proposes are all
    it knows, and no cache needs compacting. `expand` returns them as rows that are zero elsewhere."""

    def expand(self, tree: DraftTree, nodes: list[int]) -> torch.Tensor:
        ids, q = self.top_children(tree, nodes, self.vocab_size)
        return torch.zeros(len(nodes), self.vocab_size).scatter_add_(1, ids, q)   # padding: q 0 at id 0

    def end_step(self, accepted: list[int]) -> None:
        pass
