"""Tiny random models built in code (no downloads) for fast exact checks."""

from __future__ import annotations

import json
from pathlib import Path

import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

from opttree.config import TRAINING_FREE
from opttree.decoding.token_bytes import byte_decoder
from opttree.models.loading import ModelPair
from opttree.nets.grouped_attention import use_grouped_attention


class ToyTokenizer:
    """Just enough tokenizer for the engine: token i decodes to 't{i} '."""

    eos_token_id = None
    chat_template = None

    def decode(self, ids, skip_special_tokens=False):
        return "".join(f"t{int(i)} " for i in ids)

    def __call__(self, text):
        return {"input_ids": [int(w[1:]) for w in text.split() if w.startswith("t")]}


class ByteToyTokenizer(ToyTokenizer):
    """A GPT-2-style byte-level vocabulary of `vocab` tokens: most of them hold part of a character
    (😀 = F0 9F 98 80, 日 = E6 97 A5, é = C3 A9), so a tiny model's trees hold many split characters.
    Each entry is spelled in GPT-2's byte alphabet, as SmolLM2's tokenizer spells it (`convert_ids_to_tokens`)."""

    PARTS = [b"\xf0\x9f", b"\x98\x80", b" \xf0\x9f\x98", b"\x80", b"\xe6\x97", b"\xa5", b"\xc3",
             b"\xa9", b" a", b"b"]
    SPELL = {b: c for c, b in byte_decoder().items()}

    def __init__(self, vocab: int = 64):
        self.vocab = [self.PARTS[i % len(self.PARTS)] for i in range(vocab)]

    def decode(self, ids, skip_special_tokens=False):
        return b"".join(self.vocab[int(i)] for i in ids).decode("utf-8", "replace")

    def convert_ids_to_tokens(self, token):
        return "".join(self.SPELL[b] for b in self.vocab[int(token)])


START, END, NEWLINE = 1, 2, 7
ROLE_IDS = {"system": 3, "user": 4, "assistant": 5}


class ChatToyTokenizer(ToyTokenizer):
    """A chat template of the target's shape: a default system line, then per message
    <start> role text <end> newline, and <start> assistant for the generation prompt."""

    chat_template = "toy"

    def apply_chat_template(self, messages, add_generation_prompt=False, return_dict=True):
        ids = [START, ROLE_IDS["system"], 6, END, NEWLINE]
        for m in messages:
            ids += [START, ROLE_IDS[m["role"]], *self(m["content"])["input_ids"], END, NEWLINE]
        if add_generation_prompt:
            ids += [START, ROLE_IDS["assistant"]]
        return {"input_ids": ids}


def tiny_llama(seed: int = 0, vocab: int = 64, layers: int = 2, hidden: int = 32, eos: int | None = None,
               attn: str = "sdpa", scale: float = 1.0) -> LlamaForCausalLM:
    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=vocab, hidden_size=hidden, intermediate_size=2 * hidden,
                      num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2,
                      max_position_embeddings=512, tie_word_embeddings=False,
                      eos_token_id=eos, bos_token_id=None, pad_token_id=None)
    cfg._attn_implementation = attn
    model = LlamaForCausalLM(cfg).eval()
    with torch.no_grad():  # sharper logits -> non-trivial, confident distributions
        model.lm_head.weight.mul_(scale)
    model.generation_config.eos_token_id = eos
    model.generation_config.pad_token_id = eos if eos is not None else 0
    return model.requires_grad_(False)


VOCAB = 64


def save_tiny_model(folder: Path, seed: int, layers: int) -> str:
    """A random-weight Llama with a word-level tokenizer ("t0" .. "t63"), saved as a model folder."""
    tiny_llama(seed, VOCAB, layers=layers, scale=4.0).save_pretrained(folder)
    words = Tokenizer(models.WordLevel({f"t{i}": i for i in range(VOCAB)}, unk_token="t0"))
    words.pre_tokenizer = pre_tokenizers.Whitespace()
    PreTrainedTokenizerFast(tokenizer_object=words, unk_token="t0").save_pretrained(folder)
    return str(folder)


DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def tiny_pair(drafter: str = "classic", seed: int = 0, draft_seed: int = 1, vocab: int = 64,
              eos: int | None = None, draft_is_target: bool = False, scale: float = 4.0,
              device: str = "cpu", layers: int = 2, exit_layer: int = 1) -> ModelPair:
    target = tiny_llama(seed, vocab, eos=eos, scale=scale, layers=layers)
    pair = ModelPair(target, ToyTokenizer(), "tiny-target", device=torch.device(device))
    if drafter == "classic":
        pair.drafter_kind = "classic"
        pair.draft_model = target if draft_is_target else tiny_llama(draft_seed, vocab, layers=1, scale=scale)
        pair.draft_name = "tiny-draft"
    elif drafter in ("eagle", "fused"):   # "fused": a fused head (EAGLE-3 features), drafter kind eagle
        from opttree.nets.feature_head import FeatureHead, fused_layers, head_config_from_target

        torch.manual_seed(draft_seed)
        cfg = head_config_from_target(target.config)
        if drafter == "fused":
            cfg["fused_layers"] = list(fused_layers(layers))
        pair.drafter_kind = "eagle"
        pair.draft_model = FeatureHead(cfg).eval().requires_grad_(False)
        if drafter == "fused":   # a map that is not zero, so the lower layers change every draft
            torch.nn.init.normal_(pair.draft_model.fuse.weight, std=0.2)
            for norm in pair.draft_model.fused_norms:
                torch.nn.init.uniform_(norm.weight, 0.5, 1.5)
        pair.draft_name = "random-head"
    elif drafter == "early-exit":
        from opttree.nets.exit_head import ExitHead, exit_config

        torch.manual_seed(draft_seed)
        pair.drafter_kind = "early-exit"
        pair.draft_model = ExitHead(exit_config(target.config, exit_layer)).eval().requires_grad_(False)
        pair.draft_name = "random-exit-head"
    elif drafter in TRAINING_FREE:   # no draft model: the target alone
        pair.drafter_kind, pair.draft_name = drafter, drafter
    pair.target.to(device)
    use_grouped_attention(pair.target)          # as the loaders do (nets/grouped_attention.py)
    if pair.draft_model is not None:
        pair.draft_model.to(device)
        use_grouped_attention(pair.draft_model)
    return pair


def strict_json(text: str):
    """`text` parsed as standard JSON: NaN, Infinity and -Infinity, which Python's json writes by default and
    JSON.parse, jq and Spec-Bench's tools refuse, raise ValueError."""
    def refuse(constant):
        raise ValueError(f"{constant} is not standard JSON")

    return json.loads(text, parse_constant=refuse)
