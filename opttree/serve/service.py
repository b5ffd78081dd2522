"""Serving runs to many page visitors: shared models, one bounded lane, limits, clean failures.

The app calls only this module for model work, so the reliability rules live in one testable place:
- models are loaded once per allow-listed id and shared read-only (every run builds its own KV
  caches, drafter state and RNG inside `stream_run`); the one thing kept between runs is a browser
  session's own Token Recycling table (`recycling_scope: session`), keyed by that session, bounded,
  dropped when the tab closes and never handed to another session;
- model work passes through a FIFO `Lane` with a bounded number of slots; a waiting run reports its
  queue position instead of silently blocking;
- settings are validated by `DecodeConfig` on the server whatever the page sent;
- every run can be cancelled (Stop, closed tab, a client that goes away, the per-run time limit,
  which counts loading the model and reading the prompt too) before its prefill and between steps;
- failures become a `RunError` with a message for the page: out-of-memory is caught per request, and
  unexpected exceptions are logged here with their traceback but never shown to the visitor.
"""

from __future__ import annotations

import gc
import logging
import os
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field

from opttree.config import SETTING_NAMES, DecodeConfig
from opttree.decoding import cost, speculative  # called as speculative.stream_run: tests swap it in place
from opttree.decoding.prompts import clean_prompt
from opttree.drafters.context import DraftContext
from opttree.drafters.recycling import RecyclingTable
from opttree.errors import BadInput, ModelLoadError, OptTreeError
from opttree.models.loading import load_pair, with_drafter
from opttree.models.registry import ModelEntry, Registry, load_registry

log = logging.getLogger("opttree.serve.service")
SESSION_TABLES = 32     # Token Recycling tables kept for browser sessions (least recently used dropped first)


class RunError(Exception):
    """A run that could not finish; `kind` is bad_input | model | oom | cancelled | timeout | internal."""

    def __init__(self, kind: str, message: str, trace: dict | None = None):
        super().__init__(message)
        self.kind, self.message, self.trace = kind, message, trace


@dataclass
class Update:
    """One message from a streaming run: a queue position while waiting, then traces."""

    state: str                      # queued | running | done
    trace: dict | None = None
    position: int = 0               # 1 = next to run (only while queued)
    notice: str = ""


class Lane:
    """A first-come-first-served gate with `slots` concurrent holders and visible positions.

    Runs are generators, and a consumer can stop iterating without closing one (a dropped
    connection): its ticket would then block the line forever. So each run marks itself
    `suspend`ed while it hands an update out and `resume`s after; a ticket suspended for longer than
    `stale_s` loses its place or its slot, and its run stops if it is ever resumed.
    """

    def __init__(self, slots: int = 1, stale_s: float = 30.0):
        self.slots = max(1, int(slots))
        self.stale_s = stale_s
        self._cond = threading.Condition()
        self._waiting: list[object] = []
        self._held: set[object] = set()
        self._revoked: set[object] = set()
        self._suspended: dict[object, float] = {}

    def enter(self) -> object:
        ticket = object()
        with self._cond:
            self._waiting.append(ticket)
        return ticket

    def _reclaim(self) -> None:
        """Drop tickets whose consumers went away (lock held by the caller)."""
        now = time.monotonic()
        for ticket, since in list(self._suspended.items()):
            if now - since > self.stale_s:
                del self._suspended[ticket]
                if ticket in self._held:
                    self._held.discard(ticket)
                elif ticket in self._waiting:
                    self._waiting.remove(ticket)
                else:
                    continue
                self._revoked.add(ticket)
                self._cond.notify_all()

    def position(self, ticket) -> int:
        """0 when the ticket may run now (and then it holds a slot), else its place in line."""
        with self._cond:
            self._reclaim()
            if ticket in self._waiting:
                free = self.slots - len(self._held)
                idx = self._waiting.index(ticket)
                if idx < free:
                    self._waiting.remove(ticket)
                    self._held.add(ticket)
                    self._cond.notify_all()
                    return 0
                return idx - max(free, 0) + 1
            return 0

    def wait(self, ticket, timeout: float) -> int:
        with self._cond:
            self._cond.wait(timeout)
        return self.position(ticket)

    def suspend(self, ticket) -> None:
        with self._cond:
            self._suspended[ticket] = time.monotonic()

    def resume(self, ticket) -> bool:
        """False when the ticket was reclaimed while suspended: the run must stop."""
        with self._cond:
            self._suspended.pop(ticket, None)
            if ticket in self._revoked:
                self._revoked.discard(ticket)
                return False
            return True

    def leave(self, ticket) -> None:
        with self._cond:
            if ticket in self._waiting:
                self._waiting.remove(ticket)
            self._held.discard(ticket)
            self._revoked.discard(ticket)
            self._suspended.pop(ticket, None)
            self._cond.notify_all()

    @property
    def active(self) -> int:
        return len(self._held)

    @property
    def queued(self) -> int:
        return len(self._waiting)


def _is_oom(exc: BaseException) -> bool:
    if isinstance(exc, MemoryError):
        return True
    name = type(exc).__name__
    return name == "OutOfMemoryError" or (isinstance(exc, RuntimeError) and "out of memory" in str(exc).lower())


def _free_memory() -> None:
    gc.collect()
    try:
        import torch  # torch stays out of `--help`

        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    except Exception:  # noqa: BLE001 (best effort; never mask the real error)
        pass


def _public_name(draft: str) -> str:
    """The draft's file name only: traces are shown and exported, server paths stay private."""
    return os.path.basename(draft) or draft


@dataclass
class RunService:
    registry: Registry = field(default_factory=load_registry)
    lane_slots: int = 1
    time_limit_s: float = 180.0     # the app passes ServerSettings.run_time_limit_s
    device: str = "auto"
    pair_factory: object = None     # tests inject tiny models: callable(entry) -> ModelPair
    stale_s: float = 30.0           # a run whose update nobody collects this long loses its slot

    def __post_init__(self):
        self.lane = Lane(self.lane_slots, self.stale_s)
        self._pairs: dict[str, object] = {}
        self._targets: dict[tuple, object] = {}
        self._load_lock = threading.Lock()
        self._session_cancels: dict[str, set] = {}
        self._sessions_lock = threading.Lock()
        self._tables: OrderedDict[tuple, RecyclingTable] = OrderedDict()   # (session, target) -> table

    # ---- models -------------------------------------------------------------------------------
    def pair_for(self, model_id) -> tuple[object, str]:
        """The shared pair for an allow-listed id (loaded once), and any stand-in notice."""
        entry, notice = self.registry.resolve(model_id)
        with self._load_lock:
            if entry.id not in self._pairs:
                self._pairs[entry.id] = (self.pair_factory or self._load)(entry)
        return self._pairs[entry.id], notice

    def _load(self, entry: ModelEntry):
        key = (entry.target, entry.trust_remote_code)
        if key not in self._targets:
            self._targets[key] = load_pair(entry.target, drafter="none", device=self.device,
                                           trust_remote_code=entry.trust_remote_code)
        base = self._targets[key]
        if entry.drafter == "self":
            # The target proposes its own continuations: acceptance is perfect at T=0, speed is not.
            pair = with_drafter(base, "none")
            pair.drafter_kind, pair.draft_model, pair.draft_name = "classic", base.target, "self"
            return pair
        pair = with_drafter(base, entry.drafter, entry.draft or None, trust_remote_code=entry.trust_remote_code)
        if pair.draft_model is not None:
            pair.draft_name = _public_name(pair.draft_name)   # traces are shown and exported: no server paths
        return pair

    def preload(self, model_id=None) -> str:
        """Load a pair ahead of the first visitor, and its cost curve (cached, or measured in seconds);
        returns its notice ('' when none)."""
        model_id = model_id or self.registry.default
        notice = self.pair_for(model_id)[1]
        self.cost_curve(model_id)       # through the lane: never timed beside a visitor's run
        return notice

    # ---- sessions (closing a tab cancels its runs) -------------------------------------------
    def _register(self, session: str | None, flag: threading.Event) -> None:
        if session:
            with self._sessions_lock:
                self._session_cancels.setdefault(session, set()).add(flag)

    def _unregister(self, session: str | None, flag: threading.Event) -> None:
        if session:
            with self._sessions_lock:
                flags = self._session_cancels.get(session)
                if flags:
                    flags.discard(flag)
                    if not flags:
                        del self._session_cancels[session]

    def cancel_session(self, session: str | None) -> int:
        """Stop every run of one browser session; returns how many were signalled."""
        with self._sessions_lock:
            flags = list(self._session_cancels.get(session or "", ()))
        for f in flags:
            f.set()
        return len(flags)

    def end_session(self, session: str | None) -> None:
        """A closed tab: stop its runs and forget its Token Recycling tables."""
        self.cancel_session(session)
        with self._sessions_lock:
            for key in [k for k in self._tables if k[0] == session]:
                del self._tables[key]

    def session_table(self, session: str, target: str, vocab_size: int) -> RecyclingTable:
        """This session's recycling table for `target` (created empty; only this session gets it)."""
        key = (session, target)
        with self._sessions_lock:
            table = self._tables.get(key)
            if table is None or table.vocab_size != vocab_size:
                table = self._tables[key] = RecyclingTable(vocab_size)
            self._tables.move_to_end(key)
            while len(self._tables) > SESSION_TABLES:
                self._tables.popitem(last=False)
            return table

    def _context(self, pair, cfg: DecodeConfig, session: str | None) -> DraftContext:
        """What this run's drafter may keep: a session's table only for that session's own runs."""
        if pair.drafter_kind == "recycling" and cfg.recycling_scope == "session" and session:
            return DraftContext(table=self.session_table(session, pair.target_name, pair.target.config.vocab_size))
        return DraftContext()

    # ---- runs ---------------------------------------------------------------------------------
    @staticmethod
    def config(settings: dict) -> DecodeConfig:
        if not isinstance(settings, dict):
            raise BadInput("settings must be an object.")
        unknown = set(settings) - set(SETTING_NAMES)
        if unknown:
            raise BadInput(f"unknown setting(s): {', '.join(sorted(map(str, unknown)))[:200]}.")
        return DecodeConfig(**settings)

    def stream(self, model_id, prompt, settings: dict, cancel: threading.Event | None = None,
               session: str | None = None, record_target: bool = True):
        """Yield `Update`s: queue positions while waiting, then the growing trace after each step.

        `record_target=False` leaves out the target's side of each node (trace.py), as timed
        comparisons do: recording it needs each node's whole draft distribution.
        Raises RunError (with the partial trace when there is one) on any failure or cancellation.
        """

        cancel = cancel or threading.Event()
        try:
            cfg = self.config(settings)
            clean_prompt(prompt)
            entry = self.registry.get(model_id)
            if cfg.retrieval == "on" and cfg.method != "ar" and not entry.retrieval:
                raise BadInput(f"retrieval fusion is not offered for “{entry.label}”: choose a pair that "
                               "allows it, or set retrieval off.")
        except OptTreeError as exc:
            raise RunError("bad_input", str(exc)) from None
        self._register(session, cancel)
        ticket, trace, timed_out, finished = self.lane.enter(), None, [], False
        try:
            pos = self.lane.position(ticket)
            while pos:
                if cancel.is_set():
                    raise RunError("cancelled", "Stopped while waiting in the queue.")
                yield from self._hand_out(ticket, Update("queued", position=pos), None)
                pos = self.lane.wait(ticket, 0.5)
            if cancel.is_set():
                raise RunError("cancelled", "Stopped before it started.")
            # The limit covers loading the pair and the prefill: a load cannot be interrupted, but a
            # run that used up its time there stops at the check before its prefill.
            deadline = time.monotonic() + self.time_limit_s

            def stop() -> bool:
                if time.monotonic() > deadline:
                    timed_out.append(True)
                    return True
                return cancel.is_set()

            pair, notice = self.pair_for(model_id)
            context = self._context(pair, cfg, session)
            for trace in speculative.stream_run(pair, prompt, cfg, cancel=stop, record_target=record_target,
                                                context=context):
                yield from self._hand_out(ticket, Update("running", trace=trace, notice=notice), trace)
            # The work is over: free the slot before handing out the result, whoever reads it.
            self.lane.leave(ticket)
            finished = True
            yield Update("done", trace=trace, notice=notice)
        except GeneratorExit:   # the reader closed this run (a page or API client that went away)
            if not finished:
                log.info("run closed by its reader before it finished (model=%r)", model_id)
            raise
        except RunError:
            raise
        except speculative.Cancelled:
            if timed_out:
                hint = ("try fewer new tokens or nodes" if trace else
                        "loading the model and reading the prompt count towards it; try again")
                raise RunError("timeout", f"Stopped at the time limit of {self.time_limit_s:g} s per run "
                               f"({hint}).", trace) from None
            raise RunError("cancelled", "Stopped.", trace) from None
        except ModelLoadError as exc:
            log.warning("model %r unavailable: %s", model_id, exc)
            raise RunError("model", f"This model pair is unavailable right now: {exc}", trace) from None
        except OptTreeError as exc:
            raise RunError("bad_input", str(exc), trace) from None
        except Exception as exc:  # noqa: BLE001 (one run's failure must not reach other visitors)
            if _is_oom(exc):
                _free_memory()
                raise RunError("oom", "Out of memory for this run: try fewer nodes, a smaller max depth "
                               "or fewer new tokens.", trace) from None
            log.exception("run failed (model=%r)", model_id)
            raise RunError("internal", f"The run failed unexpectedly ({type(exc).__name__}); "
                           "the error was logged on the server.", trace) from None
        finally:
            self.lane.leave(ticket)
            self._unregister(session, cancel)

    def _hand_out(self, ticket, update: Update, trace):
        """Yield one update; if nobody asked for the next one in time, the lane moved on: stop."""
        self.lane.suspend(ticket)
        yield update
        if not self.lane.resume(ticket):
            raise RunError("cancelled", "Stopped: nobody was reading this run's updates.", trace)

    def cost_curve(self, model_id, refresh: bool = False) -> dict:
        """This machine's cost curve for a pair, in the compact form traces record; measured (seconds,
        through the lane like a run) when not cached yet or when `refresh` asks for it."""
        try:
            self.registry.get(model_id)
        except OptTreeError as exc:
            raise RunError("bad_input", str(exc)) from None
        ticket = self.lane.enter()
        try:
            while self.lane.position(ticket):
                self.lane.wait(ticket, 0.5)
            pair, _ = self.pair_for(model_id)
            return cost.compact(cost.load_or_measure(pair, refresh=refresh))
        except ModelLoadError as exc:
            raise RunError("model", f"This model pair is unavailable right now: {exc}") from None
        except Exception as exc:  # noqa: BLE001 (one request's failure must not reach other visitors)
            log.exception("measuring the cost curve failed (model=%r)", model_id)
            raise RunError("internal", f"Measuring failed unexpectedly ({type(exc).__name__}).") from None
        finally:
            self.lane.leave(ticket)

    def run(self, model_id, prompt, settings: dict, cancel: threading.Event | None = None) -> dict:
        """The finished trace of one run (blocking); raises RunError like `stream`."""
        last = None
        for update in self.stream(model_id, prompt, settings, cancel):
            last = update
        return last.trace
