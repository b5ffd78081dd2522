"""The draft heads' decoder forward in plain PyTorch: their Llama layers, run without `LlamaModel`.

A feature head (nets/feature_head.py) and an exit head (nets/exit_head.py) hold their layers as
transformers' `LlamaModel` (its parameter names are the checkpoints' and its modules carry the
engine's CPU kernels), but a draft layer is called several times a step over a handful of rows, and
`LlamaModel.forward`'s own bookkeeping (mask building, cache checks, output classes) costs about 0.7 ms
of the ~9 ms a step spends drafting on the 2-core CPU (benchmarks/draft_decoder.md, 2026-11-28). This is the same
maths, called module by module:

    x -> [input norm -> q, k, v -> RoPE -> attention over the cache -> o] + x
      -> [post-attention norm -> down(act(gate) * up)] + x  (per layer), then the final norm.

The keys and values go into the caller's `DynamicCache` as the model would put them, so the
engine's cache code (decoding/kv_cache.py) and a cache filled by `LlamaModel` itself both work.
Attention is the function the layer's config names, as in `LlamaAttention`: nets/grouped_attention.py's
`grouped_sdpa` (the grouped heads folded, no copy of the cache) unless OPTTREE_PLAIN_ATTENTION is set.
With no mask, every query sees the whole cache before it and the queries up to itself (causal, aligned
to the cache's end), as transformers' causal mask does.
tests/engine/test_draft_decoder.py checks it against `LlamaModel` with and without a cache, under a
tree mask and causally, with the EAGLE checkpoints' missing norms and with two layers.
"""

from __future__ import annotations

import torch

from opttree.nets.attention_mask import causal_mask
from opttree.nets.grouped_attention import NAME, grouped_sdpa


def _attention_function(attn):
    """The attention the layer's config names (nets/grouped_attention.py's fold, transformers' "sdpa",
    "eager", ...), and whether it reads a missing mask as causal (SDPA's is_causal)."""
    impl = getattr(attn.config, "_attn_implementation", None) or "sdpa"
    if impl == NAME:
        return grouped_sdpa, True
    # transformers is heavy: imported by the forward of a model that already loaded it
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS
    from transformers.models.llama.modeling_llama import eager_attention_forward

    return ALL_ATTENTION_FUNCTIONS.get_interface(impl, eager_attention_forward), impl == "sdpa"


def _attention(attn, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, mask, cache, index: int):
    batch, q_len, _ = x.shape
    dim = attn.head_dim
    q = attn.q_proj(x).view(batch, q_len, -1, dim).transpose(1, 2)
    k = attn.k_proj(x).view(batch, q_len, -1, dim).transpose(1, 2)
    v = attn.v_proj(x).view(batch, q_len, -1, dim).transpose(1, 2)
    # transformers is heavy: imported by the forward of a model that already loaded it
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    q, k = apply_rotary_pos_emb(q, k, cos, sin)       # cos, sin: (batch, q, head_dim), one rotation for every head
    if cache is not None:
        k, v = cache.update(k, v, index)
    attend, causal_flag = _attention_function(attn)
    if mask is None and q_len > 1 and (k.shape[-2] > q_len or not causal_flag):
        # causal from the cache's end (SDPA's is_causal aligns to its start; eager has no flag)
        mask = causal_mask(k.shape[-2] - q_len, q_len, q.dtype, q.device)
    dropout = attn.attention_dropout if attn.training else 0.0
    out, _ = attend(attn, q, k, v, mask, dropout=dropout, scaling=attn.scaling)
    return attn.o_proj(out.reshape(batch, q_len, -1))


def decoder_forward(decoder, x: torch.Tensor, position_ids: torch.Tensor, attention_mask=None,
                    cache=None) -> torch.Tensor:
    """`decoder(inputs_embeds=x, position_ids=..., attention_mask=..., past_key_values=cache)
    .last_hidden_state` for a transformers `LlamaModel` (batch, q, h): `attention_mask` is an
    additive (batch, 1, q, keys) float mask or None (causal); `cache` a `DynamicCache` or None."""
    cos, sin = decoder.rotary_emb(x, position_ids)
    for index, layer in enumerate(decoder.layers):
        x = x + _attention(layer.self_attn, layer.input_layernorm(x), cos, sin, attention_mask, cache, index)
        h = layer.post_attention_layernorm(x)
        mlp = layer.mlp
        x = x + mlp.down_proj(mlp.act_fn(mlp.gate_proj(h)) * mlp.up_proj(h))
    return decoder.norm(x)
