"""Feature-head drafter (EAGLE-style): drafts from the target's hidden states.

For the token at position j the head reads the pair (target feature at j-1, embedding of token j)
and predicts the feature at j, whose LM-head logits give token j+1. Committed pairs use the
target's true features (a fused head's: its low, middle and last layers', fused by the head);
tree nodes use the head's own predicted feature of their parent.
"""

from __future__ import annotations

import torch

from opttree.decoding.kv_cache import new_cache, truncate
from opttree.drafters.base import odds
from opttree.drafters.model_drafter import ModelDrafter
from opttree.errors import BadInput
from opttree.nets.placement import module_device
from opttree.trees.draft_tree import ROOT, DraftTree


class FeatureHeadDrafter(ModelDrafter):
    def __init__(self, head, target, vocab_size: int, temperature: float = 1.0):
        super().__init__(vocab_size, temperature)
        self.head = head
        self.feature_layers = head.feature_layers   # (-1,): the last hidden state, the LM head's input
        self.embed = target.get_input_embeddings()
        self.lm_head = target.get_output_embeddings()
        self.lm_device = module_device(self.lm_head)   # under device_map: where the LM head computes
        self.cache = new_cache(head.decoder)
        self.n_pairs = 0  # pairs (tokens 1..n_pairs) in the cache, all with true target features
        self.root_feature = None
        self.node_feature: dict[int, torch.Tensor] = {}
        p = next(head.parameters())
        self.device, self.dtype = p.device, p.dtype
        ids = head.vocab_ids
        outside = ids >= vocab_size       # draft rows the target's vocabulary does not have (checked once)
        self.outside = outside if ids.numel() and bool(outside.any()) else None

    def _logits(self, features: torch.Tensor) -> torch.Tensor:
        return self.head.logits(features.to(self.lm_device), self.lm_head)

    def _draft_probs(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Probabilities over the draft vocabulary (tree temperature applied) and each column's token
        id (None: column = token id). Equal to `probs(_logits(...))` restricted to those columns."""
        sub, ids = self.head.draft_logits(features.to(self.lm_device), self.lm_head)
        if ids is None:
            return self.probs(sub), None
        logits = sub.float() / self.temperature
        if self.outside is not None:
            logits = logits.masked_fill(self.outside, float("-inf"))
        return torch.softmax(logits, dim=-1), ids

    def _top(self, probs: torch.Tensor, ids: torch.Tensor | None, k: int):
        top = torch.topk(probs, min(k, probs.shape[-1]), dim=-1)
        tokens = top.indices if ids is None else ids[top.indices]
        return tokens.cpu(), top.values.cpu()

    @torch.inference_mode()
    def begin_step(self, committed: list[int], features: torch.Tensor) -> None:
        """`features`: the target's hidden states of the latest committed tokens (its `feature_layers`
        side by side; the last layer's alone for a plain head), the last row being the token before
        the root (the whole history, or only the rows not read yet: the drafter reads the rows from
        the first token it has not consumed)."""
        first, stop = self.n_pairs + 1, len(committed)
        if stop <= first:
            raise BadInput("the feature-head drafter needs a prompt of at least two tokens.")
        offset = (stop - 1) - features.shape[0]   # the position of row 0
        if offset > first - 1:
            raise ValueError(f"features start at position {offset}; the drafter needs them from {first - 1}")
        toks = torch.tensor([committed[first:stop]], device=self.device)
        rows = features[first - 1 - offset: stop - 1 - offset].to(self.device, self.dtype)
        feats = self.head.input_features(rows)[None]
        pos = torch.arange(first, stop, device=self.device)[None]
        out = self.head.features(feats, self.embed(toks).to(self.dtype), pos, None, self.cache)
        self.n_pairs = stop - 1
        self.root_pos = stop - 1
        self.root_feature = out[0, -1]
        self.root_probs = None          # the full row, made only if `distributions` asks for it
        self.root_draft = self._draft_probs(self.root_feature[None])
        self.slot, self.node_feature = {}, {}

    @torch.inference_mode()
    def distributions(self, tree: DraftTree, nodes: list[int]) -> torch.Tensor:
        if self.asks_for_root(nodes):
            if self.root_probs is None:
                self.root_probs = self.probs(self._logits(self.root_feature))
            return self.root_probs[None]
        return self.probs(self._logits(self._forward(tree, nodes)))

    def _draft_rows(self, tree: DraftTree, nodes: list[int]):
        """The layer's draft-vocabulary rows and their token ids (the root's are made in begin_step)."""
        return self.root_draft if self.asks_for_root(nodes) else self._draft_probs(self._forward(tree, nodes))

    @torch.inference_mode()
    def top_children(self, tree: DraftTree, nodes: list[int], k: int):
        return self._top(*self._draft_rows(tree, nodes), k)

    @torch.inference_mode()
    def top_children_and_odds(self, tree: DraftTree, nodes: list[int], k: int, asked: list[list[int]]):
        """The fast path's top-k, and the asked tokens' q and rank read from the same draft-vocabulary
        rows (every token outside them has q 0 in the full row too)."""
        probs, ids = self._draft_rows(tree, nodes)
        tokens, q = self._top(probs, ids, k)
        return tokens, q, odds(probs, asked, None if ids is None else self._columns(ids))

    def _columns(self, ids: torch.Tensor) -> dict[int, int]:
        """token id -> its column in the draft-vocabulary rows (made once per drafter)."""
        if getattr(self, "_column_of", None) is None:
            self._column_of = {t: c for c, t in enumerate(ids.tolist()) if t < self.vocab_size}
        return self._column_of

    def _forward(self, tree: DraftTree, nodes: list[int]) -> torch.Tensor:
        """One batched head forward over a layer's nodes; their predicted features (len(nodes), h)."""
        cache_len = self.cache.get_seq_length()
        pos, mask = self.layer_inputs(tree, nodes, self.n_pairs, cache_len, self.dtype, self.device)
        parent_feats = torch.stack([self.root_feature if tree.parents[n] == ROOT
                                    else self.node_feature[tree.parents[n]] for n in nodes])
        toks = torch.tensor([[tree.tokens[n] for n in nodes]], device=self.device)
        out = self.head.features(parent_feats[None], self.embed(toks).to(self.dtype), pos, mask, self.cache)
        for i, node in enumerate(nodes):
            self.node_feature[node] = out[0, i]
        return out[0]

    def end_step(self, accepted: list[int]) -> None:
        # Tree entries were computed from predicted features; the accepted tokens are re-fed with
        # the target's true features at the next begin_step (as EAGLE does).
        truncate(self.cache, self.n_pairs)
