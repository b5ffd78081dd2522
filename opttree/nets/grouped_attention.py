"""Tree attention over grouped key/value heads, without copying the KV cache.

SmolLM2, like Llama 3, Qwen 2 and most recent LMs, uses grouped-query attention: its 9 query heads
share 3 key/value heads, 3 to a group. For one query token transformers' SDPA path folds each group's
query heads onto their shared KV head (`pack_gqa`) and attends over the cache as it is. For more than
one query token under a mask, which is every tree verification and every draft layer wider than one
node, transformers 5.23 instead copies every layer's whole KV cache once per head of a group
(`repeat_kv`) before attending, on CPU and CUDA alike. The copy grows with the prefix and only the tree
forwards pay it, never AR's one-token forwards. On the 2-core CPU the fold makes the auto budget
+5.7 % ± 1.4 % faster on the eval set (paired per prompt, two pairs of runs), and a 2–8-token tree after
1,024 tokens of prefix 4–23 % cheaper to verify (benchmarks/grouped_attention.md).

The fold works for many query tokens as well. Query head h reads KV head h // g (g heads to a group),
and the heads of one group sit next to each other, so the (heads, queries) block of a group is g·q
query rows of its KV head: a reshape, no copy of the cache. The mask, one (queries, keys) block shared
by every head, is repeated g times down its rows (g·q rows against the cache's length: small). Every
query row attends to the same keys with the same scores as before, so the output is the same maths
(tests/engine/test_grouped_attention.py compares it with transformers' path).

`use_grouped_attention(model)` switches the SDPA attention of the model families in `FOLDS_FOR` (their
attention goes through transformers' attention registry and nothing in their code branches on the name
"sdpa"; other families keep "sdpa"). Anything the fold does not cover (a per-head mask, one query
token, a causal forward with no mask, dropout, softcapping, a paged cache, attention sinks, a position
bias) goes to transformers' SDPA function unchanged. OPTTREE_PLAIN_ATTENTION=1 switches it off.
"""

from __future__ import annotations

import functools

import torch
import torch.nn.functional as F

from opttree import paths

NAME = "opttree_grouped_sdpa"      # the name transformers' attention registry knows it by
# Model types whose modeling code (transformers 5.23) was read: attention through the registry, GQA via
# `num_key_value_groups`, no branch on the literal name "sdpa" (Falcon and Gemma 4 have such branches).
FOLDS_FOR = frozenset({"llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "smollm3",
                       "gemma", "phi3", "olmo2", "granite", "glm4", "cohere", "starcoder2"})
_NOT_FOLDED = ("softcap", "cache", "position_bias", "s_aux", "sinks")   # kwargs the fold does not apply


def grouped_sdpa(module, query, key, value, attention_mask, dropout: float = 0.0, scaling=None,
                 is_causal=None, **kwargs):
    """transformers' attention contract: (batch, heads, q, dim) queries, (batch, kv heads, k, dim)
    keys and values -> ((batch, q, heads, dim) output, None)."""
    # transformers is heavy: imported by the forward of a model that already loaded it
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    groups = int(getattr(module, "num_key_value_groups", 1) or 1)
    batch, heads, q_len, dim = query.shape
    if (groups == 1 or q_len == 1 or attention_mask is None or dropout or attention_mask.dim() != 4
            or attention_mask.shape[1] != 1 or attention_mask.shape[2] != q_len
            or key.shape[1] * groups != heads or any(kwargs.get(k) is not None for k in _NOT_FOLDED)):
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout,
                                      scaling=scaling, is_causal=is_causal, **kwargs)
    rows = query.reshape(batch, heads // groups, groups * q_len, dim)       # head-major within a group
    mask = attention_mask.repeat(1, 1, groups, 1)                           # row r·q + i is query i's
    out = F.scaled_dot_product_attention(rows, key, value, attn_mask=mask, scale=scaling)
    # the batch from the output: SDPA broadcasts a batch-1 side against the other
    return out.reshape(out.shape[0], heads, q_len, value.shape[-1]).transpose(1, 2).contiguous(), None


@functools.cache
def _register() -> str:
    from transformers import AttentionInterface  # transformers is heavy: imported when a model is switched
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    AttentionInterface.register(NAME, grouped_sdpa)
    AttentionMaskInterface.register(NAME, sdpa_mask)   # masks built exactly as for "sdpa"
    return NAME


def _configs(model: torch.nn.Module) -> list:
    """The configs of the transformers models inside `model` (itself included) whose family folds."""
    out = {}
    for m in model.modules():
        config = getattr(m, "config", None)
        if (getattr(type(m), "_supports_attention_backend", False) and config is not None
                and getattr(config, "model_type", None) in FOLDS_FOR):
            out[id(config)] = config
    return list(out.values())


def use_grouped_attention(model: torch.nn.Module) -> None:
    """Switch the SDPA attention of every folding transformers model inside `model` (a target, a
    classic draft, a head's decoder) to `grouped_sdpa`, unless OPTTREE_PLAIN_ATTENTION is set; other
    attention implementations and other model families are left as they are."""
    if paths.plain_attention():
        return
    for config in _configs(model):
        if getattr(config, "_attn_implementation", None) == "sdpa":
            config._attn_implementation = _register()


def use_copying_attention(model: torch.nn.Module) -> None:
    """Undo `use_grouped_attention`: back to transformers' SDPA, which copies the KV heads (to time the
    copy side by side, engine/cost.py's "copy-kv" kernel)."""
    for config in _configs(model):
        if getattr(config, "_attn_implementation", None) == NAME:
            config._attn_implementation = "sdpa"


def attention_of(model) -> str | None:
    """The attention implementation `model`'s first attention-bearing config names ("sdpa", NAME,
    "eager", ...); None for a model without one (a draft with no network, a dict config)."""
    if not isinstance(model, torch.nn.Module):
        return None
    for m in model.modules():
        if impl := getattr(getattr(m, "config", None), "_attn_implementation", None):
            return impl
    return None
