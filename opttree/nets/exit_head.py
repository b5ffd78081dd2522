"""EESD's exit head: a decoder layer (or a few) and a final norm reading the target's hidden state
after its first N layers; the target's own LM head turns its output into logits. The drafter that
runs it on the target's own first layers and KV cache is opttree/drafters/early_exit.py."""

from __future__ import annotations

from torch import nn

from opttree.errors import BadInput
from opttree.nets.draft_decoder import decoder_forward
from opttree.nets.feature_head import FeatureHead, head_config_from_target


def exit_config(target_config, exit_layer: int, draft_vocab: int = 0, layers: int = 1) -> dict:
    """The exit head's config: `layers` decoder layers shaped like the target's, after layer `exit_layer`."""
    check_exit_layer(target_config, exit_layer)
    return {**head_config_from_target(target_config, layers=layers, draft_vocab=draft_vocab),
            "kind": "early-exit", "exit_layer": int(exit_layer)}


def check_exit_layer(target_config, exit_layer) -> int:
    layers = int(target_config.num_hidden_layers)
    if not isinstance(exit_layer, int) or not 1 <= exit_layer < layers:
        raise BadInput(f"exit layer {exit_layer!r} is out of range: the target has {layers} layers, so the "
                       f"draft may exit after layer 1 to {layers - 1}.")
    return exit_layer


class ExitHead(FeatureHead):
    """EESD's early-exit structure: a decoder layer (or a few) and a final norm reading the target's
    hidden state after `exit_layer` layers; the target's LM head (frozen, shared) turns it into logits. It
    shares the feature head's decoder and draft-vocabulary code; it has no input projection, since
    its input is already a hidden state of the target."""

    def input_layer(self, h: int) -> nn.Module | None:
        return None

    @property
    def exit_layer(self) -> int:
        return int(self.config["exit_layer"])

    @property
    def feature_layers(self) -> tuple[int, ...]:
        """The rows the loop hands to begin_step: the target's states after layer N."""
        return (self.exit_layer,)

    def exit_features(self, hidden, position_ids, attention_mask=None, cache=None):
        """The exit layer's output for the target's layer-N hidden states, shape (1, k, h)."""
        return decoder_forward(self.decoder, hidden, position_ids, attention_mask, cache)
