"""The EAGLE-style feature head: a one-layer draft that reads the target's own hidden states.

Input at a token position: [target feature of the previous position ; embedding of this token]
-> Linear(2h -> h) -> one Llama decoder layer (+ final norm) -> predicted feature -> the target's
(frozen) LM head. Beyond the first tree layer it feeds on its own predicted features, which is why
it stays cheap: one small layer per tree layer, batched over that layer's nodes.

The fused head (config `fused_layers`, EAGLE-3's idea) reads more of the target than its last layer:
its target feature is the last hidden state plus a learned linear map of a low and a middle layer's
states (each RMS-normed first: the residual stream there is not normalised). The map starts at zero,
so a fused head warm-started from a plain one computes exactly what that head did, and training
decides how much the lower layers add. Tree nodes still feed on the head's own predicted features.

The decoder's layers are transformers' own modules (`LlamaModel` with one layer, so the parameters
carry the checkpoints' names); its token embedding is unused, so it is created with a one-row
vocabulary. nets/draft_decoder.py runs them module by module, without `LlamaModel`'s forward.
"""

from __future__ import annotations

import torch
from torch import nn

from opttree.nets.draft_decoder import decoder_forward
from opttree.nets.few_row_linear import PackedWeight, bf16_rows, few_row_matmul, int8_weights, version_key
from opttree.nets.placement import weights_at_hand

LM_ROWS = "lm_head"   # what `int8_skip` names to keep the LM-head rows fp32 (they are not a submodule)


def fused_layers(num_layers: int) -> tuple[int, int]:
    """The low and middle target layers a fused head reads besides the last one: the hidden states
    entering layer 2 and layer L/2 (transformers' `hidden_states[2]`, `hidden_states[L // 2]`; a
    target of fewer than 8 layers reads layer L/4 as its low one).
    EAGLE-3 reads layers 2, L/2 and L-3; the fused head here reads the final normed state as its
    high feature instead, the first-generation head's only input, so that head is its exact start."""
    return (min(2, num_layers // 4), num_layers // 2)


def head_config_from_target(cfg, layers: int = 1, draft_vocab: int = 0) -> dict:
    """The head mirrors the target's attention shape so features line up with no projection."""
    return {
        "hidden_size": cfg.hidden_size,
        "intermediate_size": cfg.intermediate_size,
        "num_attention_heads": cfg.num_attention_heads,
        "num_key_value_heads": getattr(cfg, "num_key_value_heads", cfg.num_attention_heads),
        "head_dim": getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads,
        "rms_norm_eps": getattr(cfg, "rms_norm_eps", 1e-5),
        "rope_theta": rope_theta(cfg),
        "max_position_embeddings": cfg.max_position_embeddings,
        "num_hidden_layers": layers,
        "draft_vocab": draft_vocab,  # 0 = full target vocabulary
    }


def rope_theta(cfg) -> float:
    params = getattr(cfg, "rope_parameters", None) or {}
    if isinstance(params, dict) and "rope_theta" in params:
        return float(params["rope_theta"])
    return float(getattr(cfg, "rope_theta", 10000.0))


class FeatureHead(nn.Module):
    # Input projections keep fp32 weights when the head runs on int8 (nets/few_row_linear.py): their
    # input puts the target's hidden state beside a token embedding, and one activation scale for both
    # erases the embedding (with `fc` on int8 too, τ 2.55 -> 2.14 at n = 10, benchmarks/int8_drafts.md, 2026-11-27).
    # LM_ROWS here would keep the LM-head rows fp32 too: τ-neutral at n = 10, but at the auto budget
    # within noise of fp32 (the rows are where int8 saves time; benchmarks/int8_drafts.md).
    int8_skip = ("fc", "fuse")

    def __init__(self, config: dict):
        super().__init__()
        from transformers import LlamaConfig, LlamaModel  # transformers is heavy: imported when a model is built

        self.config = dict(config)
        h = config["hidden_size"]
        self.fc = self.input_layer(h)
        fused = list(config.get("fused_layers") or [])
        if fused:   # the fused head's extra inputs (see the module docstring)
            self.fused_norms = nn.ModuleList(nn.RMSNorm(h, eps=config["rms_norm_eps"]) for _ in fused)
            self.fuse = nn.Linear(len(fused) * h, h, bias=False)
            nn.init.zeros_(self.fuse.weight)
        llama = LlamaConfig(
            vocab_size=1, hidden_size=h, intermediate_size=config["intermediate_size"],
            num_hidden_layers=config["num_hidden_layers"],
            num_attention_heads=config["num_attention_heads"],
            num_key_value_heads=config["num_key_value_heads"], head_dim=config["head_dim"],
            rms_norm_eps=config["rms_norm_eps"],
            rope_parameters={"rope_type": "default", "rope_theta": config["rope_theta"]},
            max_position_embeddings=config["max_position_embeddings"],
            bos_token_id=None, eos_token_id=None, pad_token_id=None,
        )
        llama._attn_implementation = "sdpa"
        self.decoder = LlamaModel(llama)
        if config.get("eagle_norms"):
            # EAGLE-1/2 checkpoints (nets/eagle_checkpoint.py): layer 0 reads the projection with no
            # input norm, and no final norm follows the last layer.
            self.decoder.layers[0].input_layernorm = nn.Identity()
            self.decoder.norm = nn.Identity()
        # Optional reduced draft vocabulary: rows of the target LM head the head may propose.
        n_vocab = int(config.get("draft_vocab") or 0)
        self.register_buffer("vocab_ids", torch.zeros(n_vocab, dtype=torch.long), persistent=True)

    def input_layer(self, h: int) -> nn.Module | None:
        """What turns a (previous feature, token embedding) pair into the decoder's input."""
        return nn.Linear(2 * h, h, bias=True)

    @property
    def feature_layers(self) -> tuple[int, ...]:
        """The target's hidden states this head reads, in the order `input_features` takes them side
        by side: the fused layers (transformers' `hidden_states` numbering), then the last (-1)."""
        return (*[int(i) for i in self.config.get("fused_layers") or []], -1)

    def input_features(self, target_features: torch.Tensor) -> torch.Tensor:
        """The first-depth feature from the target's rows (..., len(feature_layers) * h): the last
        hidden state, plus for a fused head the fused map of the lower layers' normed states."""
        if not hasattr(self, "fuse"):
            return target_features
        *lower, last = target_features.split(self.config["hidden_size"], dim=-1)
        normed = [norm(x) for norm, x in zip(self.fused_norms, lower)]
        return last + self.fuse(torch.cat(normed, dim=-1))

    def features(self, prev_features, token_embeds, position_ids, attention_mask=None, cache=None):
        """Predicted features for a batch of (previous feature, token) pairs, shape (1, k, h)."""
        x = self.fc(torch.cat([prev_features, token_embeds], dim=-1))
        return decoder_forward(self.decoder, x, position_ids, attention_mask, cache)

    def _rows_int8(self) -> bool:
        """Whether the LM-head rows run on int8: the head does, and `int8_skip` does not name `lm_head`."""
        return int8_weights(self) and LM_ROWS not in self.int8_skip

    def _draft_rows(self, weight: torch.Tensor) -> tuple[torch.Tensor, PackedWeight]:
        """The LM-head rows the head proposes from (the draft vocabulary's, gathered once: gathering
        them per call copied 14 MB each time and was the largest single cost of a small-tree step on
        CPU, measured 2026-11-27; with no draft vocabulary, the LM head's own weight, detached so that it
        never becomes a parameter of the head), and the head's holder of their packed copy for its current
        kernel."""
        key = (version_key(weight), weight.dtype, weight.device, version_key(self.vocab_ids))   # changed: gather again
        if getattr(self, "_rows_key", None) != key:
            with torch.no_grad():
                self._rows = weight[self.vocab_ids].contiguous() if self.vocab_ids.numel() else weight.detach()
            self._rows_key, self._rows_packs = key, {}
        kind = self.rows_kernel()
        return self._rows, self._rows_packs.setdefault(kind, PackedWeight(kind == "int8", kind == "bf16"))

    def rows_kernel(self) -> str:
        """What the LM-head rows run on: "int8" (with the head's int8 weights), "bf16" (a draft
        vocabulary's rows on the CPU, `few_row_linear.bf16_rows`) or "fp32" (a full-vocabulary head calls
        the target's own LM head; an int8 head whose `int8_skip` names them keeps them fp32; a GPU runs
        them as they are)."""
        if self._rows_int8():
            return "int8"
        keep_fp32 = int8_weights(self) and LM_ROWS in self.int8_skip
        on_cpu = self.vocab_ids.device.type == "cpu"
        return "bf16" if self.vocab_ids.numel() and on_cpu and not keep_fp32 and bf16_rows() else "fp32"

    def draft_logits(self, features, lm_head: nn.Module) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Logits over the draft vocabulary only, and the target-vocabulary id of each column (None:
        the full target vocabulary). A tree only needs each node's top children, so softmax and
        top-k run over these columns; spreading them into a full-vocabulary row first cost more
        than the layer's forward. A full-vocabulary head on fp32 weights calls the target's LM head as
        it is; on int8 it keeps its own int8 copy of it (bias included), so the target's stays fp32."""
        full = self.vocab_ids.numel() == 0
        if full and not self._rows_int8():
            return lm_head(features), None
        flat = features.reshape(-1, features.shape[-1])
        with weights_at_hand(lm_head):   # an LM head that device_map offloaded holds its weight for its forward only
            rows, pack = self._draft_rows(lm_head.weight)
            bias = getattr(lm_head, "bias", None) if full else None
            sub = few_row_matmul(flat, rows, pack, bias).reshape(*features.shape[:-1], rows.shape[0])
        return sub, None if full else self.vocab_ids

    def logits(self, features, lm_head: nn.Module):
        """Logits over the target vocabulary; with a reduced vocabulary the rest get -inf."""
        sub, ids = self.draft_logits(features, lm_head)
        if ids is None:
            return sub
        full = sub.new_full((*sub.shape[:-1], lm_head.weight.shape[0]), float("-inf"))
        full[..., ids] = sub
        return full
