"""How deep to draft each step: the length controllers (`--length-control`).

- `delta` (the default): OPT-Tree's own rule, applied by the builder: deepen while a layer raises
  E(A) by more than δ. Nothing here.
- `thompson` (after EESD, Liu et al. 2024): a Beta posterior over θ, the chance that the draft's
  token at the next depth is accepted given that its parent was. Each step samples θ̃ from the
  posterior and drafts the deepest L ≤ max depth whose last layer is still worth its price:
  under θ̃ the path reaches depth L with probability θ̃^L, so layer L adds θ̃^L expected tokens, and
  drafting stops where that falls to δ or below (the δ rule with the E(A) gains replaced by the
  posterior's). L is the step's depth limit: the builder grows at most L layers with δ no longer
  consulted (OPT-Tree still stops early when a layer adds nothing to its best n nodes, and the auto
  budget may choose fewer layers for this machine). After verification a step that drafted D layers
  and accepted A tokens adds min(A, D) successes and, when A < D, one failure (the first depth the
  target refused).

  Sampling θ̃ rather than using the posterior mean is what makes it Thompson sampling: while the
  posterior is wide the depth varies and the run keeps learning about depths it would otherwise
  never try. The draws come from the controller's own generator, seeded from the run's seed, so a
  run is reproducible and the token picker's draws (hence the output) are untouched.

- `predictor` (after AdaEAGLE, Zhang et al. 2024): a small network reading the target's last hidden
  state predicts the coming step's accepted length Â (opttree/nets/length_predictor.py, trained by
  `python -m opttree.train --kind length-predictor`); the step may draft round(Â) + 1 layers, one
  past the prediction (its depth limit, as above), with no threshold to set. It learns nothing during the run.

The loop calls `choose(features)` before building a step's tree (features: the target's last hidden
state, read only by controllers with `needs_features`) and `observe` after verifying it.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field, replace

from opttree.config import DecodeConfig
from opttree.errors import BadInput


@dataclass
class ThompsonLength:
    needs_features = False
    max_depth: int
    price: float                       # δ: the least expected gain a layer must bring
    seed: int = 0
    alpha: float = 1.0                 # Beta(1, 1): every θ equally likely before the first step
    beta: float = 1.0
    rng: random.Random = field(init=False, repr=False)

    def __post_init__(self):
        self.rng = random.Random(self.seed)

    def depth_for(self, theta: float) -> int:
        """The deepest L ≤ max_depth with θ^L > price (at least 1: a step always drafts)."""
        if theta <= 0.0 or self.price >= 1.0:
            return 1
        if theta >= 1.0 or self.price <= 0.0:
            return self.max_depth
        return max(1, min(self.max_depth, math.ceil(math.log(self.price) / math.log(theta)) - 1))

    def choose(self, features=None) -> dict:
        """Sample θ̃ and pick this step's depth; returns the decision as the trace records it."""
        alpha, beta = self.alpha, self.beta
        theta = self.rng.betavariate(alpha, beta)
        return {"control": "thompson", "alpha": round(alpha, 4), "beta": round(beta, 4),
                "theta": round(theta, 6), "price": self.price, "depth": self.depth_for(theta)}

    def observe(self, drafted: int, accepted: int) -> None:
        """A verified step: `drafted` layers, `accepted` draft tokens committed on its path."""
        if drafted <= 0:
            return
        self.alpha += min(accepted, drafted)
        if accepted < drafted:
            self.beta += 1.0


@dataclass
class PredictorLength:
    predict: object                    # features -> Â (a LengthPredictor)
    max_depth: int
    needs_features = True

    def choose(self, features=None) -> dict:
        """Â from the features (none before the target has read a token: the deepest tree), and the
        depth one layer past it."""
        if features is None:
            return {"control": "predictor", "predicted": None, "depth": self.max_depth}
        # The network stays on the CPU (one shared copy): the loop's state may live on a GPU.
        predicted = float(self.predict(features.detach().float().cpu()))
        depth = max(1, min(self.max_depth, round(predicted) + 1))
        return {"control": "predictor", "predicted": round(predicted, 4), "depth": depth}

    def observe(self, drafted: int, accepted: int) -> None:
        """Nothing to learn during a run: the predictor was trained beforehand."""


def controller_for(cfg: DecodeConfig, load_predictor=None) -> ThompsonLength | PredictorLength | None:
    """The run's length controller; None for the δ rule (the builder applies it itself).
    `load_predictor()` gives the learned predictor's network (the engine loads it only when asked)."""
    if cfg.method == "ar" or cfg.length_control == "delta":
        return None
    if cfg.length_control == "thompson":
        return ThompsonLength(cfg.max_depth, cfg.threshold, seed=cfg.seed)
    if load_predictor is None:
        raise BadInput("the learned length predictor needs a target to read features from.")
    return PredictorLength(load_predictor(), cfg.max_depth)


def controller_name(decision: dict) -> str:
    """Who made a decision, in words."""
    return "Thompson sampling" if decision.get("control") == "thompson" else "the learned predictor"


def apply(cfg: DecodeConfig, decision: dict) -> DecodeConfig:
    """The step's settings under a decision: at most its depth, and no δ rule inside it."""
    return replace(cfg, max_depth=min(cfg.max_depth, decision["depth"]), threshold=0.0)
