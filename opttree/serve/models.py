"""The loaded-model cache: each allow-listed pair loaded once and shared read-only by every run.

Targets are loaded once per (target, trust_remote_code) and each pair is the target with its draft
(`with_drafter`); every run builds its own KV caches, drafter state and RNG inside `stream_run`, so
sharing the weights is safe. A pair's cost curve is measured through the run lane, never beside a
visitor's run. Errors are raised as they come: `RunService` turns them into messages for the page.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from opttree.config import SELF_DRAFT
from opttree.drafters.registry import load_pair, with_drafter
from opttree.engine import batch_cost, cost
from opttree.engine.speculative import run_acceptance, warm_up
from opttree.errors import OptTreeError
from opttree.serve.allow_list import ModelEntry, Registry
from opttree.serve.lane import Lane
from opttree.serve.settings import ServerSettings


def warmed(pair):
    """A loaded pair after one short untimed run, so a visitor's first run is timed warm."""
    warm_up(pair)
    return pair


@dataclass
class ModelCache:
    registry: Registry
    lane: Lane                      # what cost-curve measurements wait for, like runs
    device: str = ServerSettings.device
    pair_factory: object = None     # tests inject tiny models: callable(entry) -> ModelPair
    _pairs: dict = field(default_factory=dict, init=False, repr=False)     # entry id -> pair
    _targets: dict = field(default_factory=dict, init=False, repr=False)   # (target, remote code) -> pair
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def pair_for(self, model_id) -> tuple[object, str]:
        """The shared pair for an allow-listed id (loaded once), and any stand-in notice."""
        entry, notice = self.registry.resolve(model_id)
        with self._lock:
            if entry.id not in self._pairs:
                try:
                    self._pairs[entry.id] = self.pair_factory(entry) if self.pair_factory else warmed(self._load(entry))
                except OptTreeError as exc:      # the page shows it: the server's paths stay private
                    raise type(exc)(entry.public_text(str(exc))) from exc
        return self._pairs[entry.id], notice

    def _load(self, entry: ModelEntry):
        """The entry's pair: loaded from its real locations, which key the caches, and carrying its public
        names (serve/allow_list.py), which its traces record: they are shown and exported, server paths are not."""
        key = (entry.target, entry.trust_remote_code)
        if key not in self._targets:
            self._targets[key] = load_pair(entry.target, drafter="none", device=self.device,
                                           trust_remote_code=entry.trust_remote_code)
            if entry.public_target != entry.target:     # a folder's; a hub id, the bundled id keep their own
                self._targets[key].public_target = entry.public_target
        base = self._targets[key]
        if entry.drafter == SELF_DRAFT:
            # The target proposes its own continuations: acceptance is perfect at T=0, speed is not.
            pair = with_drafter(base, "none")
            pair.drafter_kind, pair.draft_model, pair.draft_name = "classic", base.target, SELF_DRAFT
            return pair
        pair = with_drafter(base, entry.drafter, entry.draft or None, trust_remote_code=entry.trust_remote_code)
        if pair.draft_model is not None:
            pair.public_draft = entry.public_draft
        return pair

    def _in_lane(self, model_id, measure):
        """`measure(pair)` once the run lane is free, so a measurement is never timed beside a run."""
        ticket = self.lane.enter()
        try:
            while self.lane.position(ticket):
                self.lane.wait(ticket, 0.5)
            pair, _ = self.pair_for(model_id)
            return measure(pair)
        finally:
            self.lane.leave(ticket)

    def cost_curve(self, model_id, refresh: bool = False) -> dict:
        """This machine's cost curve for a pair, in the compact form traces record; measured (seconds,
        waiting for the lane like a run) when not cached yet or when `refresh` asks for it."""
        return self._in_lane(model_id, lambda pair: cost.compact(cost.load_or_measure(pair, refresh=refresh)))

    def serving_model(self, model_id, refresh: bool = False) -> dict:
        """What the batching model reads for a pair (engine/batch_cost.py): the verify cost surface with
        the draft's costs, and the draft's acceptance by rank with its source; measured through the
        lane (a minute or so on a CPU) when not cached yet or when `refresh` asks for it."""
        def measure(pair):
            vector, source = run_acceptance(pair)
            return {"surface": batch_cost.surface_with_draft(pair, refresh=refresh), "acceptance": list(vector),
                    "acceptance_source": source}
        return self._in_lane(model_id, measure)
