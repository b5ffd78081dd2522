"""What the model drafters (classic LM, feature head, early exit) share beyond the Drafter interface:
the tree temperature's softmax, each tree node's slot in the draft's own KV cache, and the positions
and ancestor-only mask of one tree layer's forward."""

from __future__ import annotations

import torch

from opttree.decoding.tree_attention import tree_mask
from opttree.drafters.base import Drafter
from opttree.trees.draft_tree import ROOT, DraftTree


class ModelDrafter(Drafter):
    def __init__(self, vocab_size: int, temperature: float = 1.0):
        super().__init__(vocab_size, temperature)
        self.slot: dict[int, int] = {}                 # tree node -> its row in the draft's cache this step
        self.slot_pos: dict[int, int] = {}             # such a row -> its node's position in the text
        self.root_probs: torch.Tensor | None = None    # the root's child distribution (begin_step)
        self.root_pos = 0                              # the root's position in the text

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
                     dtype, device, config=None):
        """Positions and the ancestor-only mask for forwarding `nodes` after `cache_len` keys.

        Every node's ancestors were forwarded in earlier layers (a node is only expanded after its
        parent), so their cache slots are known; the root lives in the committed prefix. With the
        `config` of a model with local layers the mask keeps their windows too (`tree_mask`); that
        model's cache must hold the committed text in order (key column i is position i), as the
        classic draft's and the target's do.
        """
        visible = []
        for i, node in enumerate(nodes):
            ancestors = tree.path(node)[:-1]
            visible.append([self.slot[a] for a in ancestors] + [cache_len + i])
            self.slot[node] = cache_len + i
            self.slot_pos[cache_len + i] = self.root_pos + tree.depth[node]
        positions = torch.tensor([[self.root_pos + tree.depth[n] for n in nodes]], device=device)

        def key_positions():
            at = torch.arange(cache_len + len(nodes))
            for col in range(prefix_len, len(at)):     # this step's tree slots, after the prefix
                at[col] = self.slot_pos[col]
            return positions[0], at

        mask = tree_mask(prefix_len, cache_len + len(nodes), visible, dtype, device, config, key_positions)
        self.last_visible = (prefix_len, cache_len + len(nodes), visible)   # `plain_mask` rebuilds it unwindowed
        return positions, mask

    def plain_mask(self, dtype, device):
        """The last `layer_inputs` mask without any layer's window: the tree mask of a full-attention layer."""
        return tree_mask(*self.last_visible, dtype, device)

    def asks_for_root(self, nodes: list[int]) -> bool:
        """True when the call asks for the root's children (answered from begin_step)."""
        if nodes == [ROOT]:
            return True
        if ROOT in nodes:
            raise ValueError("the root is expanded on its own")
        return False
