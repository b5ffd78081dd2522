"""Decoding settings, validated once for every entry point (CLI, app, API, benchmarks).

The UI's slider ranges are not trusted: the server-side limits below apply to every request.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from .errors import BadInput
from .tree_temperature import LIMITS as TREE_TEMPERATURE_LIMITS

TREE_METHODS = ("opt-tree", "chain", "binary", "eagle-static", "eagle-dynamic")
METHODS = TREE_METHODS + ("ar",)
LIMITS = {"nodes": (1, 500), "max_depth": (1, 20), "threshold": (0.0, 1e6),
          "temperature": (0.0, 2.0), "max_new_tokens": (1, 2048), "top_p": (0.0, 1.0),
          "top_k": (0, 100000), "eagle_top_k": (1, 64),
          "seed": (0, 2**53),  # seeds a browser can send exactly (JavaScript numbers)
          "tree_temperature": (0.0, TREE_TEMPERATURE_LIMITS[1])}

# The node budget when none is given (`--nodes auto`). It follows the verify-cost curve: on a GPU a
# forward over 60 tree tokens costs about what one token costs, so the paper's n = 60 is right; on
# the CPU measured here a forward is flat only up to ~8 tokens, and the bench's fastest budget was
# n = 4 (benchmarks/README.md, "Best budget"). The app keeps n = 60 as its teaching default.
GPU_DEFAULT_NODES = 60
CPU_DEFAULT_NODES = 4


def default_nodes(device_type: str) -> int:
    return GPU_DEFAULT_NODES if device_type == "cuda" else CPU_DEFAULT_NODES


@dataclass
class DecodeConfig:
    method: str = "opt-tree"
    nodes: int = 60
    threshold: float = 0.5
    max_depth: int = 10
    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int = 0
    max_new_tokens: int = 128
    seed: int = 0
    eagle_top_k: int = 10
    # Drafting at T = 0 divides draft logits by this before the tree is built (tree_temperature.py).
    # 0 means "the draft's own fitted value" (its card's); the trace's meta records the value used.
    tree_temperature: float = 0.0

    def __post_init__(self):
        if self.method not in METHODS:
            raise BadInput(f"unknown method {self.method!r}: choose one of {', '.join(METHODS)}.")
        for name, (lo, hi) in LIMITS.items():
            value = getattr(self, name)
            want_int = isinstance(getattr(DecodeConfig, name, 0), int) and name != "threshold"
            try:
                number = float(value)
            except (TypeError, ValueError):
                raise BadInput(f"{name} must be a number, got {value!r}.") from None
            if not math.isfinite(number) or number < lo or number > hi:
                raise BadInput(f"{name} must be between {lo:g} and {hi:g}, got {value!r}.")
            if want_int and number != int(number):
                raise BadInput(f"{name} must be a whole number, got {value!r}.")
            setattr(self, name, int(number) if want_int else number)
        if 0 < self.tree_temperature < TREE_TEMPERATURE_LIMITS[0]:
            raise BadInput(f"tree_temperature must be 0 (the draft's fitted value) or between "
                           f"{TREE_TEMPERATURE_LIMITS[0]:g} and {TREE_TEMPERATURE_LIMITS[1]:g}, "
                           f"got {self.tree_temperature!r}.")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0

    def to_dict(self) -> dict:
        return asdict(self)
