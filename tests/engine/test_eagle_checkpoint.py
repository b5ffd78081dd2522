"""Official EAGLE-1/2 heads load from the reference repo's checkpoint layout (written here, no download)."""

from __future__ import annotations

import json

import pytest
import torch
import torch.nn.functional as F
from tiny import tiny_pair

from opttree.config import TREE_METHODS, DecodeConfig
from opttree.engine.speculative import run
from opttree.errors import ModelLoadError
from opttree.models.draft_assets import load_bundled_classic, load_exit_head, load_feature_head
from opttree.models.loading import ModelPair


def eagle_state(target, seed: int = 5, bias: bool = True) -> dict:
    """Weights named and shaped as in an EAGLE-1/2 checkpoint for `target` (one decoder layer)."""
    cfg = target.config
    h, inter = cfg.hidden_size, cfg.intermediate_size
    hd = h // cfg.num_attention_heads
    g = torch.Generator().manual_seed(seed)

    def w(*shape, scale=0.2):
        return torch.randn(*shape, generator=g) * scale

    state = {"fc.weight": w(h, 2 * h), "embed_tokens.weight": target.get_input_embeddings().weight.clone(),
             "layers.0.self_attn.q_proj.weight": w(cfg.num_attention_heads * hd, h),
             "layers.0.self_attn.k_proj.weight": w(cfg.num_key_value_heads * hd, h),
             "layers.0.self_attn.v_proj.weight": w(cfg.num_key_value_heads * hd, h),
             "layers.0.self_attn.o_proj.weight": w(h, cfg.num_attention_heads * hd),
             "layers.0.mlp.gate_proj.weight": w(inter, h), "layers.0.mlp.up_proj.weight": w(inter, h),
             "layers.0.mlp.down_proj.weight": w(h, inter),
             "layers.0.post_attention_layernorm.weight": 1 + w(h, scale=0.1)}
    if bias:
        state["fc.bias"] = w(h)
    return state


def write_checkpoint(folder, target, state, fmt="safetensors", **extra):
    cfg = target.config
    folder.mkdir(parents=True, exist_ok=True)
    config = {"architectures": ["LlamaForCausalLM"], "hidden_size": cfg.hidden_size,
              "intermediate_size": cfg.intermediate_size, "num_attention_heads": cfg.num_attention_heads,
              "num_key_value_heads": cfg.num_key_value_heads, "num_hidden_layers": 1, "rms_norm_eps": 1e-6,
              "max_position_embeddings": 512, "vocab_size": cfg.vocab_size, "hidden_act": "silu",
              "rope_theta": 10000.0, **extra}
    (folder / "config.json").write_text(json.dumps(config))
    if fmt == "safetensors":
        from safetensors.torch import save_file

        save_file({k: v.contiguous() for k, v in state.items()}, str(folder / "model.safetensors"))
    else:
        torch.save(state, folder / "pytorch_model.bin")
    return folder


def eagle_reference(state, target, feature, token) -> torch.Tensor:
    """EAGLE's head at a sequence's first position, written from its published structure: fc over
    [embedding ; feature], then a decoder layer with no input norm (attention over one position is
    o_proj(v_proj(x)), GQA heads repeated), post-attention RMSNorm + SwiGLU MLP; no final norm."""
    cfg = target.config
    emb = target.get_input_embeddings().weight[token]
    x = F.linear(torch.cat([emb, feature]), state["fc.weight"], state.get("fc.bias"))
    v = F.linear(x, state["layers.0.self_attn.v_proj.weight"])
    hd = cfg.hidden_size // cfg.num_attention_heads
    v = v.view(cfg.num_key_value_heads, hd).repeat_interleave(cfg.num_attention_heads // cfg.num_key_value_heads, 0)
    x = x + F.linear(v.reshape(-1), state["layers.0.self_attn.o_proj.weight"])
    n = x * torch.rsqrt(x.pow(2).mean() + 1e-6) * state["layers.0.post_attention_layernorm.weight"]
    gate = F.silu(F.linear(n, state["layers.0.mlp.gate_proj.weight"]))
    mlp = F.linear(gate * F.linear(n, state["layers.0.mlp.up_proj.weight"]), state["layers.0.mlp.down_proj.weight"])
    return x + mlp


@pytest.mark.parametrize("fmt", ["safetensors", "bin"])
def test_eagle_layout_computes_eagles_function(tmp_path, fmt):
    pair = tiny_pair("classic")
    state = eagle_state(pair.target)
    head = load_feature_head(str(write_checkpoint(tmp_path / "ea", pair.target, state, fmt)), pair.target)
    feature = torch.randn(pair.target.config.hidden_size, generator=torch.Generator().manual_seed(1))
    token = 7
    ours = head.features(feature.view(1, 1, -1), pair.target.get_input_embeddings().weight[token].view(1, 1, -1),
                         position_ids=torch.tensor([[0]]))
    ref = eagle_reference(state, pair.target, feature, token)
    assert torch.allclose(ours.view(-1), ref, atol=1e-5)
    # The embedding and the feature are not interchangeable: reading fc's columns unswapped is wrong.
    fc = state["fc.weight"]
    unswapped = {**state, "fc.weight": torch.cat([fc[:, 32:], fc[:, :32]], 1)}
    swapped = eagle_reference(unswapped, pair.target, feature, token)
    assert not torch.allclose(ours.view(-1), swapped, atol=1e-3)


@pytest.mark.parametrize("method", TREE_METHODS)
def test_greedy_output_with_an_eagle_checkpoint_equals_ar(tmp_path, method):
    pair = tiny_pair("classic")
    folder = write_checkpoint(tmp_path / "ea", pair.target, eagle_state(pair.target, bias=False), bias=False)
    head = ModelPair(pair.target, pair.tokenizer, "tiny", "eagle", load_feature_head(str(folder), pair.target), "ea")
    ref = run(pair, "", DecodeConfig(method="ar", max_new_tokens=12), prompt_ids=[3, 4, 5])["output_ids"]
    trace = run(head, "", DecodeConfig(method=method, nodes=8, max_depth=3, max_new_tokens=12), prompt_ids=[3, 4, 5])
    assert trace["output_ids"] == ref and trace["meta"]["drafter"] == "eagle"


def test_wrong_or_unsupported_checkpoints_are_clear_errors(tmp_path):
    pair = tiny_pair("classic")
    state = eagle_state(pair.target)
    with pytest.raises(ModelLoadError, match="hidden size"):
        load_feature_head(str(write_checkpoint(tmp_path / "a", pair.target, state, hidden_size=48)), pair.target)
    eagle3 = {**state, "midlayer.hidden_norm.weight": torch.ones(32), "d2t": torch.zeros(8, dtype=torch.long)}
    with pytest.raises(ModelLoadError, match="EAGLE-3"):
        load_feature_head(str(write_checkpoint(tmp_path / "b", pair.target, eagle3)), pair.target)
    with pytest.raises(ModelLoadError, match="does not match"):
        odd = {**state, "layers.0.extra": torch.ones(3)}
        load_feature_head(str(write_checkpoint(tmp_path / "c", pair.target, odd)), pair.target)
    # A hub id with no network (HF_HUB_OFFLINE=1 in the tests): one clear message, no traceback.
    with pytest.raises(ModelLoadError, match="from the hub"):
        load_feature_head("someone/EAGLE-nonexistent-head", pair.target)


def test_a_draft_file_that_is_not_safetensors_is_a_clear_error(tmp_path):
    """A GGUF (or any file that is not safetensors) given as a head is named as such (failed before: safetensors'
    own "unexpected SafetensorError: ... header too large", status 1)."""
    pair = tiny_pair("classic")
    gguf = tmp_path / "model.Q4_1.gguf"
    gguf.write_bytes(b"GGUF" + bytes(64))
    for load in (load_feature_head, load_exit_head):
        with pytest.raises(ModelLoadError, match="not a safetensors file"):
            load(str(gguf), pair.target)


def test_a_plain_hugging_face_weights_file_given_as_a_draft_file_says_what_it_is_not(tmp_path):
    """A Hugging Face model's model.safetensors (no `config` metadata) as --ea-model-path read as a head "trained
    for hidden size None" (failed before); each draft loader names the file as not its kind of draft, with
    the tensors such a draft holds and the ones the file has."""
    pair = tiny_pair("classic")
    pair.target.save_pretrained(tmp_path / "hf")
    plain = str(tmp_path / "hf" / "model.safetensors")
    for load, what in ((load_feature_head, "not an EAGLE feature head (tensors fc.weight and decoder.layers"),
                       (load_exit_head, "not an early-exit head"), (load_bundled_classic, "not a classic draft file")):
        with pytest.raises(ModelLoadError, match=r"no `config` in its metadata") as err:
            load(plain, pair.target)
        assert what in str(err.value) and "model.embed_tokens.weight" in str(err.value)
        assert "hidden size None" not in str(err.value)
