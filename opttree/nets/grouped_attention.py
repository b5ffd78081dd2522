"""Tree attention over grouped key/value heads, without copying the KV cache.

SmolLM2, like Llama 3, Qwen 2 and most recent LMs, uses grouped-query attention: its 9 query heads
share 3 key/value heads, 3 to a group. For one query token transformers' SDPA path folds each group's
query heads onto their shared KV head (`pack_gqa`) and attends over the cache as it is. For more than
one query token under a mask, which is every tree verification and every draft layer wider than one
node, transformers 5.23 instead copies every layer's whole KV cache once per head of a group
(`repeat_kv`) before attending, on CPU and CUDA alike. The copy grows with the prefix and is paid by
the tree forwards only, never by AR's one-token forwards: on the 2-core CPU (fp32, 2 threads) a
2-token verification after 1,024 tokens of prefix cost 1.24× a one-token forward with it, and 1.0–1.05×
without it (benchmarks/grouped_attention.md).

The fold works for many query tokens as well. Query head h reads KV head h // g (g heads to a group),
and the heads of one group sit next to each other, so the (heads, queries) block of a group is g·q
query rows of its KV head: a reshape, no copy of the cache. The mask, one (queries, keys) block shared
by every head, is repeated g times down its rows (g·q rows against the cache's length: small). Every
query row attends to the same keys with the same scores as before, so the output is the same maths;
on CPU it matches transformers' path bit for bit (tests/unit/test_grouped_attention.py).

`use_grouped_attention(model)` switches every SDPA attention in `model` to this function; anything
else (eager attention, a per-head mask, one query token, a causal forward with no mask, dropout) goes
to transformers' SDPA function unchanged. OPTTREE_PLAIN_ATTENTION=1 switches it off, to time the copy.
"""

from __future__ import annotations

import functools

import torch
import torch.nn.functional as F

from opttree import paths

NAME = "opttree_grouped_sdpa"      # the name transformers' attention registry knows it by


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
            or key.shape[1] * groups != heads or kwargs.get("position_bias") is not None):
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout,
                                      scaling=scaling, is_causal=is_causal, **kwargs)
    rows = query.reshape(batch, heads // groups, groups * q_len, dim)       # head-major within a group
    mask = attention_mask.repeat(1, 1, groups, 1)                           # row r·q + i is query i's
    out = F.scaled_dot_product_attention(rows, key, value, attn_mask=mask, scale=scaling)
    return out.reshape(batch, heads, q_len, value.shape[-1]).transpose(1, 2).contiguous(), None


@functools.cache
def _register() -> str:
    from transformers import AttentionInterface  # transformers is heavy: imported when a model is switched
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    AttentionInterface.register(NAME, grouped_sdpa)
    AttentionMaskInterface.register(NAME, sdpa_mask)   # masks built exactly as for "sdpa"
    return NAME


def _configs(model: torch.nn.Module) -> list:
    """The configs `model`'s modules hold (one object is usually shared by all of them)."""
    return list({id(c): c for m in model.modules() if (c := getattr(m, "config", None)) is not None}.values())


def use_grouped_attention(model: torch.nn.Module) -> None:
    """Switch `model`'s SDPA attention (every config its modules hold) to `grouped_sdpa`, unless
    OPTTREE_PLAIN_ATTENTION is set; other attention implementations are left as they are."""
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
