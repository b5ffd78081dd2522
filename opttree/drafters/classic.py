"""Classic drafter: an independent causal LM with its own KV cache and token-only inputs."""

from __future__ import annotations

import torch

from opttree.decoding.kv_cache import compact, new_cache
from opttree.drafters.model_drafter import ModelDrafter
from opttree.models.loading import last_logits_only
from opttree.trees.draft_tree import DraftTree


class ClassicDrafter(ModelDrafter):
    def __init__(self, model, vocab_size: int, temperature: float = 1.0):
        super().__init__(vocab_size, temperature)
        self.model = model
        self.cache = new_cache(model)
        self.n_cached = 0   # committed tokens whose keys/values are in the cache
        self.prefix = 0
        p = next(model.parameters())
        self.device, self.dtype = p.device, p.dtype

    @torch.inference_mode()
    def begin_step(self, committed: list[int], features=None) -> None:
        new = committed[self.n_cached:]
        ids = torch.tensor([new], device=self.device)
        pos = torch.arange(self.n_cached, len(committed), device=self.device)[None]
        # only the last row's logits are read: the first step reads the whole prompt
        out = self.model(input_ids=ids, position_ids=pos, past_key_values=self.cache, use_cache=True,
                         **last_logits_only(self.model))
        self.n_cached = self.prefix = len(committed)
        self.root_pos = len(committed) - 1
        self.root_probs = self.probs(out.logits[0, -1])
        self.slot = {}

    @torch.inference_mode()
    def distributions(self, tree: DraftTree, nodes: list[int]) -> torch.Tensor:
        if self.asks_for_root(nodes):
            return self.root_probs[None]
        cache_len = self.cache.get_seq_length()
        pos, mask = self.layer_inputs(tree, nodes, self.prefix, cache_len, self.dtype, self.device,
                                      self.model.config)
        ids = torch.tensor([[tree.tokens[n] for n in nodes]], device=self.device)
        out = self.model(input_ids=ids, position_ids=pos, attention_mask=mask,
                         past_key_values=self.cache, use_cache=True)
        return self.probs(out.logits[0])

    def end_step(self, accepted: list[int]) -> None:
        # Accepted nodes that were forwarded keep their keys/values (they were computed with the
        # right ancestors and positions); the rest are fed as plain tokens at the next begin_step.
        kept = []
        for node in accepted:
            if node not in self.slot:
                break
            kept.append(self.slot[node])
        keep = torch.cat([torch.arange(self.prefix), torch.tensor(kept, dtype=torch.long)])
        compact(self.cache, keep)
        self.n_cached = self.prefix + len(kept)
