"""The drafter interface shared by the classic draft LM and the EAGLE-style feature head.

A step goes: `begin_step` (consume the tokens committed since last step, compute the root's child
distribution) -> `expand` once per tree layer (one batched forward over that layer's nodes, each
seeing only the committed prefix and its own ancestors) -> `end_step` (compact the draft cache to
what stays valid for the next step).
"""

from __future__ import annotations

import torch

from opttree.decoding.tree_attention import tree_mask
from opttree.trees.draft_tree import ROOT, DraftTree


class Drafter:
    needs_features = False  # True when begin_step needs the target's hidden states

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
        both (len(nodes), k) on the CPU: one top-k per layer and one copy off the device."""
        probs = self.expand(tree, nodes)
        top = torch.topk(probs, min(k, probs.shape[-1]), dim=-1)
        return top.indices.cpu(), top.values.cpu()

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
