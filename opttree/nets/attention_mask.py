"""Attention masks as transformers 5.x and the engine's attention read them.

A 4D mask `(batch, 1, queries, keys)` passes through transformers untouched. It must be an *additive
float* mask (0 = attend, the dtype's min = blocked): a bool mask is right with SDPA but silently wrong
with eager attention, which computes `scores + mask`. Every mask the engine builds (the tree mask of
decoding/tree_attention.py, the causal masks of the draft heads and the early exit) ends here.

Local attention. Some models give some or all layers a sliding window (Mistral v0.1, Gemma 2/3, Qwen 2
with its window on, gpt-oss) or attention chunks (Llama 4). A query at position q sees a key at position
k only while q - k < window, or while both sit in one chunk of that size (`q // size == k // size`), as
transformers' own masks say (`masking_utils`). A mask handed to such a model must carry that rule
itself: transformers leaves a 4D mask untouched. `for_model` adds it per layer kind and hands back
what the model's forward reads: one tensor when every layer attends alike, else a dict from layer kind
to mask (the `causal_mask_mapping` those models build for themselves and take ready-made).
"""

from __future__ import annotations

import dataclasses

import torch


def additive_mask(allowed: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """bool (q, k) -> float (1, 1, q, k) with 0 where allowed and the dtype's min elsewhere."""
    mask = torch.zeros(allowed.shape, dtype=dtype, device=allowed.device)
    mask.masked_fill_(~allowed, torch.finfo(dtype).min)
    return mask[None, None]


def causal_mask(prefix_len: int, new: int, dtype, device, config=None):
    """`new` tokens after `prefix_len` cached ones, each seeing the prefix and the new ones up to itself:
    causal aligned to the cache's end (SDPA's `is_causal` aligns to its start). With `config`, as
    `for_model` hands it to that model (cache column i holding position i)."""
    allowed = torch.ones(new, prefix_len + new, dtype=torch.bool, device=device).tril(prefix_len)
    if not local_spans(config):
        return additive_mask(allowed, dtype)
    pos = torch.arange(prefix_len + new, device=device)
    return for_model(allowed, dtype, config, pos[prefix_len:], pos)


LOCAL_SPAN = {"sliding_attention": "sliding_window", "chunked_attention": "attention_chunk_size"}


def text_config(config):
    """The decoder's config (a multimodal model's text part; a text model's own config)."""
    return config.get_text_config() if hasattr(config, "get_text_config") else config


def layer_kinds(config) -> list[str]:
    """Each decoder layer's attention kind ('full_attention', 'sliding_attention', ...), read as
    transformers reads the config: `layer_types` where the config class declares it (Qwen 2, Gemma 2/3,
    Llama 4; those models take a mask per kind), else one kind for every layer from `sliding_window` or
    `attention_chunk_size` (Mistral, Phi-3, Llama: their models build one mask and ignore a stray
    `layer_types` a checkpoint may carry)."""
    cfg = text_config(config)
    declared = not dataclasses.is_dataclass(cfg) or "layer_types" in {f.name for f in dataclasses.fields(cfg)}
    kinds = getattr(cfg, "layer_types", None) if declared else None
    n = getattr(cfg, "num_hidden_layers", None) or 1
    if kinds is None:
        kind = ("sliding_attention" if getattr(cfg, "sliding_window", None) is not None else
                "chunked_attention" if getattr(cfg, "attention_chunk_size", None) is not None else "full_attention")
        kinds = [kind] * n
    return list(kinds)


def local_spans(config) -> dict[str, int]:
    """{layer kind: its window or chunk size} for the local kinds `config`'s layers use (empty when
    every layer attends over the whole context, or for no config). A local kind without a size is
    left out: transformers refuses to build its mask."""
    if config is None:
        return {}
    cfg = text_config(config)
    sizes = {kind: getattr(cfg, field, None) for kind, field in LOCAL_SPAN.items()}
    sizes = {kind: size for kind, size in sizes.items() if isinstance(size, int) and size > 0}
    if not sizes:     # no window or chunk size at all (most models): no layer kind needs reading
        return {}
    return {kind: sizes[kind] for kind in set(layer_kinds(config)) if kind in sizes}


def for_model(allowed: torch.Tensor, dtype, config, query_pos: torch.Tensor, key_pos: torch.Tensor):
    """The mask `config`'s model reads for queries at positions `query_pos` (q,) that may see the keys
    marked in `allowed` (q, k), whose positions are `key_pos` (k,): each local layer kind also drops
    the keys outside its window or chunk. One additive tensor when every layer attends alike, else
    {layer kind: additive tensor}."""
    spans = local_spans(config)
    gap = query_pos[:, None] - key_pos[None, :]
    masks = {}
    for kind in set(layer_kinds(config)):
        seen = allowed
        if kind == "sliding_attention" and kind in spans:
            seen = allowed & (gap < spans[kind])
        elif kind == "chunked_attention" and kind in spans:
            seen = allowed & (query_pos[:, None] // spans[kind] == key_pos[None, :] // spans[kind])
        masks[kind] = additive_mask(seen, dtype)
    return next(iter(masks.values())) if len(masks) == 1 else masks


def for_layer(mask, kind: str):
    """The tensor a layer of `kind` reads from `for_model`'s answer (None and tensors pass through)."""
    return mask[kind] if isinstance(mask, dict) else mask


def cache_scaled_limit(config) -> int | None:
    """The positions a run may use on a model that scales some layers' queries by a position counted
    from its cache's length, not from `position_ids` (Llama 4's temperature tuning of its NoPE layers:
    a factor that steps at every multiple of `floor_scale`). A tree forward puts node i at cache length
    + i while its position is prefix + depth, so it is exact only while no node can cross such a step:
    below floor_scale, less the largest tree. None for every other model."""
    cfg = text_config(config)
    scale = getattr(cfg, "floor_scale", None)
    nope = getattr(cfg, "no_rope_layers", None)
    if not getattr(cfg, "attn_temperature_tuning", False) or not isinstance(scale, int) or not nope or all(nope):
        return None
    return scale - 1


def rope_switch_limit(config) -> int | None:
    """The positions a run may use on a LongRoPE model (Phi-3's long-context releases): past
    `original_max_position_embeddings` transformers rotates every position by the long factors instead,
    dropping the cache and encoding the whole sequence again (`Phi3ForCausalLM.prepare_inputs_for_generation`),
    which a kept cache cannot follow. None for every other model."""
    cfg = text_config(config)
    rope = getattr(cfg, "rope_parameters", None) or getattr(cfg, "rope_scaling", None) or {}
    if not isinstance(rope, dict) or rope.get("rope_type", rope.get("type")) != "longrope":
        return None
    return rope.get("original_max_position_embeddings") or getattr(cfg, "original_max_position_embeddings", None)


# Layer kinds (transformers' cache layer types) that keep a recurrent state instead of, or beside, keys
# and values, and model types whose configs declare no layer kinds but are recurrent throughout.
RECURRENT_KINDS = {"linear_attention", "conv", "hybrid", "hybrid_sliding", "mamba"}
RECURRENT_MODELS = {"mamba", "mamba2", "falcon_mamba", "rwkv", "xlstm", "recurrent_gemma", "jamba", "zamba",
                    "zamba2", "bamba", "falcon_h1", "granitemoehybrid", "nemotron_h", "lfm2", "lfm2_moe"}


def tree_refusal(config) -> str | None:
    """Why a forward of this model over a draft tree cannot equal its plain forwards, or None.

    A tree forward lays its nodes side by side in cache slots and tells each node its own position and
    ancestors (the tree mask). That is exact for attention that takes positions from `position_ids` and
    visibility from the mask. It is not for:
    - ALiBi (BLOOM, MPT, Falcon with `alibi`, Jais, Baichuan's 13B models): the bias grows with the
      distance in cache slots, so a node's siblings and cousins shift every distance it sees (BLOOM and
      Falcon also build the bias from a 2D mask and cannot read a 4D one);
    - recurrent and linear-attention layers (Mamba, RWKV, Jamba, Qwen3-Next, LFM2, ...): every node,
      siblings included, runs through one state, and a rejected node cannot be taken back out of it;
    - GPT-Neo's local layers: their window counts cache slots, not positions."""
    cfg = text_config(config)
    kind = getattr(cfg, "model_type", "") or ""
    attn = getattr(cfg, "attn_config", None)
    alibi = getattr(cfg, "alibi", False) is True or getattr(attn, "alibi", False) is True
    # Baichuan (remote code) names no position scheme: its 13B models (Baichuan-13B, Baichuan2-13B) use ALiBi
    # and its 7B ones, the models 4,096 wide, rotary positions; vLLM tells them apart the same way.
    alibi = alibi or (kind == "baichuan" and getattr(cfg, "hidden_size", None) != 4096)
    if kind in ("bloom", "mpt") or alibi or getattr(cfg, "position_embedding_type", None) == "alibi":   # the last: Jais
        return (f"{kind or 'this model'} uses ALiBi, whose bias counts distances in cache slots: a tree's "
                "nodes sit side by side there, so each would see its context at the wrong distances.")
    if kind in RECURRENT_MODELS or RECURRENT_KINDS & set(layer_kinds(cfg)):
        return (f"{kind or 'this model'} has recurrent or linear-attention layers: a tree forward runs every "
                "node, siblings included, through one state, and a rejected node cannot be taken back out.")
    if "local" in (getattr(cfg, "attention_layers", None) or ()):
        return (f"{kind or 'this model'}'s local attention layers window by cache slot, not by position: "
                "a tree's nodes would see the wrong part of the context.")
    return None
