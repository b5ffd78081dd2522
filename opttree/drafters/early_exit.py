"""The early-exit drafter (EESD-style): the target's own first N layers plus a trained exit head.

The draft of a token is the target itself, stopped after its first N decoder layers: the hidden
state there goes through an exit head (one decoder layer and a final norm, self-distilled from the
target's outputs) and the target's own LM head. Nothing of the target is copied:

- **weights**: the first N layers *are* the target's layers, called one by one (`first_layers`);
- **KV cache**: those layers attend over the target's own cache. For the committed prefix the keys
  and values a layer would compute are exactly the ones the target stored when it verified those
  tokens (same weights, same inputs, same positions), so the drafter appends only the root and the
  tree nodes to the first N layers of the target's cache, and cuts them off again before the target
  verifies (`finish_tree`). A caller that ends a step without verifying (the cost measurement) gets
  the tree cut off at `end_step`, the root kept: nothing else has touched the cache.

The exit layer keeps its own small cache. Its inputs for committed tokens are the target's hidden
states after layer N, which the verification forward returns (`feature_layers`); for the root and
tree nodes the drafter computes them. Since the first N layers run exactly as in the target, a node
several layers deep sees the same layer-N states the target would compute for that path: unlike a
feature head, the draft does not drift on its own predicted features. Its cost is N of the target's
layers per tree layer, which is why N is small (docs/drafts.md: the sweep that chose it).

A target with sliding-window or chunked layers: each of the first N layers reads its own kind's mask
(`attention_mask.for_model`); the exit layer attends over its whole cache, as it does in training.
"""

from __future__ import annotations

import torch

from opttree.decoding.kv_cache import new_cache, truncate
from opttree.drafters.feature_head import FeatureHeadDrafter
from opttree.errors import BadInput
from opttree.nets.attention_mask import causal_mask, for_layer, layer_kinds, local_spans
from opttree.nets.exit_head import ExitHead, check_exit_layer
from opttree.nets.placement import input_device
from opttree.trace import BuildInfo
from opttree.trees.draft_tree import DraftTree


def body(model):
    """The target's decoder stack (embedding, rotary embedding, layers): Llama-style models only."""
    inner = getattr(model, "model", None)
    if not all(hasattr(inner, a) for a in ("embed_tokens", "rotary_emb", "layers")):
        raise BadInput(f"early-exit drafting needs a Llama-style target (embed_tokens, rotary_emb, layers); "
                       f"{type(model).__name__} has another layout.")
    return inner


def first_layers(model, input_ids, position_ids, mask, cache, n: int) -> torch.Tensor:
    """The target's hidden states after its first `n` layers, (B, k, h): what `hidden_states[n]` of a
    full forward holds. With a cache, these layers' keys and values are appended to it (layers < n
    only). `mask` is the 4D additive mask over the cache plus these tokens, or `for_model`'s dict by
    layer kind (None: one token with no local layers, or a causal forward with no cache)."""
    stack = body(model)
    kinds = layer_kinds(model.config)
    if len(kinds) < n:
        raise BadInput(f"the target's config names the attention of {len(kinds)} layers; the early exit runs {n}.")
    x = stack.embed_tokens(input_ids)
    rope = stack.rotary_emb(x, position_ids=position_ids)
    for layer, kind in zip(stack.layers[:n], kinds):
        x = layer(x, attention_mask=for_layer(mask, kind), position_ids=position_ids, past_key_values=cache,
                  use_cache=cache is not None, position_embeddings=rope)
    return x


@torch.inference_mode()
def check_matches_target(model, exit_layer: int) -> None:
    """BadInput unless `first_layers` reproduces the target's own hidden state after `exit_layer`
    layers (an architecture whose forward does more than embed -> layers, such as a scaled
    embedding, would give the exit head inputs it was never trained on)."""
    check_exit_layer(model.config, exit_layer)
    device = input_device(model)
    ids = torch.arange(1, 6, device=device)[None] % model.config.vocab_size
    pos = torch.arange(ids.shape[1], device=device)[None]
    want = model(input_ids=ids, output_hidden_states=True).hidden_states[exit_layer]
    dtype = model.get_input_embeddings().weight.dtype
    got = first_layers(model, ids, pos, causal_mask(0, ids.shape[1], dtype, device), None, exit_layer)
    # Two attention kernels (causal vs masked) agree to rounding: fp32's 1e-3, a few bf16/fp16 steps.
    tol = max(1e-3, 16 * torch.finfo(dtype).eps)
    if not torch.allclose(got.float(), want.float(), rtol=tol, atol=tol * float(want.abs().max()) + 1e-5):
        raise BadInput(f"early-exit drafting does not support {type(model).__name__}: running its first "
                       f"{exit_layer} layers alone does not give its own hidden state there.")


class EarlyExitDrafter(FeatureHeadDrafter):
    def __init__(self, head: ExitHead, target, vocab_size: int, temperature: float = 1.0):
        super().__init__(head, target, vocab_size, temperature)
        self.target = target
        self.shared = None     # the target's KV cache (attach); a cache of our own when used alone
        self.keep = 0          # committed tokens (root excluded) in the shared cache: what verification expects
        self.grown = False     # the shared cache holds this step's root and tree (cut them before verifying)
        self.n_exit = 0        # committed tokens (root included) in the exit layer's cache

    def attach(self, cache) -> None:
        self.shared = cache

    def _restore(self, length: int) -> None:
        """Cut what this step appended off the first N layers of the shared cache, down to `length`.
        Only once: after verification the cache is the target's again, and longer."""
        if not self.grown:
            return
        self.grown = False
        for layer in self.shared.layers[: self.head.exit_layer]:
            keys = getattr(layer, "keys", None)
            if keys is not None and keys.shape[-2] > length:
                layer.keys, layer.values = keys[..., :length, :], layer.values[..., :length, :]

    @torch.inference_mode()
    def begin_step(self, committed: list[int], features: torch.Tensor | None) -> None:
        """`features`: the target's hidden states after layer N for the latest committed tokens, the last
        row being the token before the root (None when there are none to hand over)."""
        n, stop = self.head.exit_layer, len(committed)
        if self.shared is None:
            self.shared = new_cache(self.target)
        have = self.shared.get_seq_length()
        if have > stop - 1:
            raise ValueError(f"the target's cache holds {have} tokens; only {stop - 1} are committed before the root")
        # Tokens the target has not run yet: the root, and when used alone everything not seen so far.
        new = committed[have:]
        pos = torch.arange(have, stop, device=self.device)[None]
        mask = self._causal(have, len(new))
        hidden = first_layers(self.target, torch.tensor([new], device=self.device), pos, mask, self.shared, n)
        hidden = hidden.to(self.device)   # with device_map, layer N may sit on another GPU than the head
        self.grown = True
        # The exit layer's inputs from its first unread position to the root.
        first = self.n_exit
        rows = [hidden[0, max(0, first - have):]]
        if first < have:
            offset = (stop - 1) - (0 if features is None else features.shape[0])   # position of row 0
            if features is None or offset > first:
                raise ValueError(f"the exit layer needs the target's layer-{n} states from position {first}")
            rows.insert(0, features[first - offset: have - offset].to(self.device, self.dtype))
        states = torch.cat(rows)[None]
        pos = torch.arange(first, stop, device=self.device)[None]
        mask = causal_mask(first, stop - first, self.dtype, self.device) if stop - first > 1 else None
        out = self.head.exit_features(states, pos, mask, self.cache)
        self.keep, self.n_exit = stop - 1, stop
        self.n_pairs = stop          # the parent's name for the prefix every tree node sees
        self.root_pos = stop - 1
        self.root_feature = out[0, -1]
        self.root_probs = None
        self.root_draft = self._draft_probs(self.root_feature[None])
        self.slot = {}

    def _forward(self, tree: DraftTree, nodes: list[int]) -> torch.Tensor:
        """One batched forward of a tree layer: the target's first N layers over the shared cache, then
        the exit layer over its own (both hold the same slots: prefix + root + earlier tree layers)."""
        cache_len = self.cache.get_seq_length()
        pos, mask = self.layer_inputs(tree, nodes, self.n_pairs, cache_len, self.dtype, self.device,
                                      self.target.config)
        ids = torch.tensor([[tree.tokens[node] for node in nodes]], device=self.device)
        hidden = first_layers(self.target, ids, pos, mask, self.shared, self.head.exit_layer)
        self.grown = True
        plain = self.plain_mask(self.dtype, self.device) if local_spans(self.target.config) else mask
        return self.head.exit_features(hidden.to(self.device), pos, plain, self.cache)[0]

    def _causal(self, prefix_len: int, new: int):
        """The mask of `new` committed tokens after `prefix_len` (None for one token where no layer is local)."""
        if new == 1 and not local_spans(self.target.config):
            return None
        return causal_mask(prefix_len, new, self.dtype, self.device, self.target.config)

    def finish_tree(self, tree: DraftTree, info: BuildInfo, cfg, cost=None):
        self._restore(self.keep)      # the target verifies root and tree after the committed prefix
        return super().finish_tree(tree, info, cfg, cost)

    def end_step(self, accepted: list[int]) -> None:
        self._restore(self.keep + 1)  # not verified (no finish_tree): the root's keys stay valid
        truncate(self.cache, self.n_exit)
