"""The draft-length predictor's network and loader (after AdaEAGLE's Lightweight Draft Length Predictor).

It reads the target's last hidden state and predicts the accepted length of the coming step; the
length controller (trees/length_control.py) drafts one layer past the prediction. Trained by
`python -m opttree.train --kind length-predictor` (opttree/train/length_predictor.py); the bundled
file is for SmolLM2-135M-Instruct and its card names that target.
"""

from __future__ import annotations

import functools
from pathlib import Path

import torch
from torch import nn

from opttree import paths
from opttree.errors import BadInput

DEFAULT_PREDICTOR = paths.ASSETS / "length" / "smollm2-length-predictor.safetensors"
HIDDEN = 8


class LengthPredictor(nn.Module):
    """features (d,) -> predicted accepted length Â ≥ 0: normalise, d → 8 → 1, softplus."""

    def __init__(self, dim: int, hidden: int = HIDDEN):
        super().__init__()
        self.register_buffer("mean", torch.zeros(dim))
        self.register_buffer("std", torch.ones(dim))
        self.net = nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = (x.float() - self.mean) / self.std
        return nn.functional.softplus(self.net(x)).squeeze(-1)


@functools.lru_cache(maxsize=8)
def load_length_predictor(path, dim: int) -> LengthPredictor:
    """A predictor file for a target whose hidden size is `dim` (BadInput when it was made for another)."""
    from safetensors.torch import load_file  # imported with the weights it reads

    try:
        state = load_file(str(path))
    except (OSError, ValueError) as exc:
        raise BadInput(f"cannot read the length predictor {path}: {exc}") from None
    if state["mean"].shape[0] != dim:
        raise BadInput(f"the length predictor {Path(path).name} reads {state['mean'].shape[0]}-wide hidden states; "
                       f"this target's are {dim} wide (it was trained for another target).")
    model = LengthPredictor(dim, state["net.0.weight"].shape[0])
    model.load_state_dict({k: v.float() for k, v in state.items()})
    return model.eval().requires_grad_(False)     # read inside the decoding loop's inference mode
