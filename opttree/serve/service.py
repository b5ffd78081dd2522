"""Serving runs to many page visitors: shared models, one bounded lane, limits, clean failures.

The app calls only this module for model work, so the reliability rules live in one testable place.
`RunService` composes one concern per module:
- `models.ModelCache`: models are loaded once per allow-listed id and shared read-only (every run
  builds its own KV caches, drafter state and RNG inside `stream_run`);
- `sessions.Sessions`: the one thing kept between runs is a browser session's own Token Recycling
  table (`recycling_scope: session`), keyed by that session, bounded, dropped when the tab closes and
  never handed to another session; and the cancel flags of each session's runs;
- `lane.Lane`: model work passes through a FIFO lane with a bounded number of slots; a waiting run
  reports its queue position instead of silently blocking;
- here: settings are validated by `DecodeConfig` on the server whatever the page sent; every run can
  be cancelled (Stop, closed tab, a client that goes away, the per-run time limit, which counts
  loading the model and reading the prompt too) before its prefill and between steps; failures
  become a `RunError` with a message for the page: out-of-memory is caught per request, and
  unexpected exceptions are logged here with their traceback but never shown to the visitor.
"""

from __future__ import annotations

import gc
import logging
import threading
import time
from dataclasses import dataclass, field, replace

from opttree.config import SETTING_NAMES, DecodeConfig
from opttree.decoding.prompts import clean_prompt
from opttree.engine import speculative  # called as speculative.stream_run: tests swap it in place
from opttree.errors import BadInput, ModelLoadError, OptTreeError
from opttree.serve.allow_list import Registry, load_registry
from opttree.serve.lane import STALE_S, Lane
from opttree.serve.models import ModelCache
from opttree.serve.sessions import Sessions
from opttree.serve.settings import ServerSettings

log = logging.getLogger("opttree.serve.service")


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
    progress: dict | None = None    # a job of several runs (stream_job): its message before each run
    result: dict | None = None      # a job's result (state "done")


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


def _unavailable(exc: ModelLoadError, trace: dict | None = None) -> RunError:
    return RunError("model", f"This model pair is unavailable right now: {exc}", trace)


@dataclass
class RunService:
    registry: Registry = field(default_factory=load_registry)
    lane_slots: int = ServerSettings.lane_slots
    time_limit_s: float = ServerSettings.run_time_limit_s
    device: str = ServerSettings.device
    pair_factory: object = None     # tests inject tiny models: callable(entry) -> ModelPair
    stale_s: float = STALE_S        # a run whose update nobody collects this long loses its slot

    def __post_init__(self):
        self.lane = Lane(self.lane_slots, self.stale_s)
        self.models = ModelCache(self.registry, self.lane, self.device, self.pair_factory)
        self.sessions = Sessions()

    # ---- models -------------------------------------------------------------------------------
    def pair_for(self, model_id) -> tuple[object, str]:
        """The shared pair for an allow-listed id (loaded once), and any stand-in notice."""
        return self.models.pair_for(model_id)

    def preload(self, model_id=None) -> str:
        """Load a pair ahead of the first visitor, and its cost curve (cached, or measured in seconds);
        returns its notice ('' when none)."""
        model_id = model_id or self.registry.default
        notice = self.pair_for(model_id)[1]
        self.cost_curve(model_id)       # through the lane: never timed beside a visitor's run
        return notice

    def cost_curve(self, model_id, refresh: bool = False) -> dict:
        """This machine's cost curve for a pair, in the compact form traces record; measured (seconds,
        through the lane like a run) when not cached yet or when `refresh` asks for it."""
        return self._measured(model_id, "cost_curve", refresh)

    def serving_model(self, model_id, refresh: bool = False) -> dict:
        """The batching model's inputs for a pair (serve/models.py `serving_model`): measured through the
        lane when not cached yet or when `refresh` asks for it."""
        return self._measured(model_id, "serving_model", refresh)

    def _measured(self, model_id, what: str, refresh: bool) -> dict:
        try:
            self.registry.get(model_id)
        except OptTreeError as exc:
            raise RunError("bad_input", str(exc)) from None
        try:
            return getattr(self.models, what)(model_id, refresh=refresh)
        except ModelLoadError as exc:
            raise _unavailable(exc) from None
        except Exception as exc:  # noqa: BLE001 (one request's failure must not reach other visitors)
            if _is_oom(exc):
                _free_memory()
                raise RunError("oom", "Out of memory while measuring: try again when the machine is less busy.") \
                    from None
            log.exception("measuring failed (%s, model=%r)", what, model_id)
            raise RunError("internal", f"Measuring failed unexpectedly ({type(exc).__name__}).") from None

    # ---- sessions (closing a tab cancels its runs) -------------------------------------------
    def cancel_session(self, session: str | None, scope: str | None = None) -> int:
        """Stop the runs of one browser session, those of one scope (a tab's Stop stops that tab's runs)
        or with None every one (a closed tab); returns how many were signalled."""
        return self.sessions.cancel(session, scope)

    def end_session(self, session: str | None) -> None:
        """A closed tab: stop its runs and forget its Token Recycling tables."""
        self.sessions.end(session)

    def session_table(self, session: str, target: str, vocab_size: int):
        """This session's recycling table for `target` (created empty; only this session gets it)."""
        return self.sessions.table(session, target, vocab_size)

    # ---- runs ---------------------------------------------------------------------------------
    @staticmethod
    def config(settings: dict) -> DecodeConfig:
        if not isinstance(settings, dict):
            raise BadInput("settings must be an object.")
        unknown = set(settings) - set(SETTING_NAMES)
        if unknown:
            raise BadInput(f"unknown setting(s): {', '.join(sorted(map(str, unknown)))[:200]}.")
        return DecodeConfig(**settings)

    def _checked(self, model_id, prompt, settings: dict) -> DecodeConfig:
        """The run's settings, or a bad_input RunError before the run takes a place in the lane."""
        try:
            cfg = self.config(settings)
            clean_prompt(prompt)
            entry = self.registry.get(model_id)
            if cfg.retrieval == "on" and cfg.method != "ar" and not entry.retrieval:
                raise BadInput(f"retrieval fusion is not offered for “{entry.label}”: choose a pair that "
                               "allows it, or set retrieval off.")
            if cfg.retrieval == "auto" and not entry.retrieval:
                cfg = replace(cfg, retrieval="off")     # auto fuses only where the allow-list lets it
        except OptTreeError as exc:
            raise RunError("bad_input", str(exc)) from None
        return cfg

    def stream(self, model_id, prompt, settings: dict, cancel: threading.Event | None = None,
               session: str | None = None, record_target: bool = True, scope: str = ""):
        """Yield `Update`s: queue positions while waiting, then the growing trace after each step.

        `record_target=False` leaves out the target's side of each node (trace.py), as timed
        comparisons do: recording it needs each node's whole draft distribution.
        Raises RunError (with the partial trace when there is one) on any failure or cancellation.
        """
        cfg = self._checked(model_id, prompt, settings)

        def work(pair, notice, stop, _others):
            trace = None
            context = self.sessions.context(pair, cfg, session)
            for trace in speculative.stream_run(pair, prompt, cfg, cancel=stop, record_target=record_target,
                                                context=context):
                yield Update("running", trace=trace, notice=notice)
            return Update("done", trace=trace, notice=notice)

        yield from self._in_lane(model_id, work, cancel, session, scope=scope)

    def stream_job(self, model_id, job, settings: dict, cancel: threading.Event | None = None,
                   session: str | None = None, others: dict | None = None, scope: str = ""):
        """Yield `Update`s of a job of several runs (the Compare tab's benchmark) that holds one lane slot:
        queue positions, then `progress` before each run, then `Update("done", result=...)`.

        `job(pair, cfg, stop, pairs)` is a generator: `cfg` the settings validated here, `stop()` True once
        the job must end (Stop, closed tab, the time limit, which covers the whole job), `pairs` {drafter:
        pair} for `others` ({drafter: allow-listed model id}); it yields progress dicts, and a dict with
        a "result" key last. Raises RunError like `stream`."""
        try:
            cfg = self.config(settings)
            for mid in (model_id, *(others or {}).values()):
                self.registry.get(mid)
        except OptTreeError as exc:
            raise RunError("bad_input", str(exc)) from None

        def work(pair, notice, stop, pairs):
            for message in job(pair, cfg, stop, pairs):
                if "result" in message:
                    return Update("done", notice=notice, result=message["result"])
                yield Update("running", notice=notice, progress=message)
            raise RuntimeError("the job ended without a result")

        yield from self._in_lane(model_id, work, cancel, session, others or {},
                                 hint="try one prompt, fewer budgets or fewer new tokens", scope=scope)

    def _in_lane(self, model_id, work, cancel: threading.Event | None, session: str | None, others=None,
                 hint: str = "try fewer new tokens or nodes", scope: str = ""):
        """Run `work(pair, notice, stop, pairs)` (a generator of Updates whose return value is the final
        one) in a lane slot, with the time limit, cancellation and failures as RunError. The cancel flag is
        kept under the session and `scope` (the tab whose Stop may end it)."""
        cancel = cancel or threading.Event()
        self.sessions.register(session, cancel, scope)
        ticket, last, timed_out, finished, ran = self.lane.enter(), None, [], False, False
        try:
            yield from self._wait_for_slot(ticket, cancel)
            # The limit covers loading the pair and the prefill: a load cannot be interrupted, but a
            # run that used up its time there stops at the check before its prefill.
            deadline = time.monotonic() + self.time_limit_s

            def stop() -> bool:
                if time.monotonic() > deadline:
                    timed_out.append(True)
                    return True
                return cancel.is_set()

            pair, notice = self.pair_for(model_id)
            pairs = {drafter: self.pair_for(mid)[0] for drafter, mid in (others or {}).items()}
            updates = work(pair, notice, stop, pairs)
            while True:
                try:
                    update = next(updates)
                except StopIteration as end:
                    final = end.value
                    break
                last, ran = update.trace, True
                yield from self._hand_out(ticket, update, last)
            # The work is over: free the slot before handing out the result, whoever reads it.
            self.lane.leave(ticket)
            finished = True
            yield final
        except GeneratorExit:   # the reader closed this run (a page or API client that went away)
            if not finished:
                log.info("run closed by its reader before it finished (model=%r)", model_id)
            raise
        except RunError:
            raise
        except Exception as exc:  # noqa: BLE001 (one run's failure must not reach other visitors)
            raise self._failure(exc, model_id, last, bool(timed_out), hint if ran else None) from None
        finally:
            self.lane.leave(ticket)
            self.sessions.unregister(session, cancel, scope)

    def _wait_for_slot(self, ticket, cancel: threading.Event):
        """Yield queue positions until the ticket holds a lane slot (RunError if cancelled meanwhile)."""
        pos = self.lane.position(ticket)
        while pos:
            if cancel.is_set():
                raise RunError("cancelled", "Stopped while waiting in the queue.")
            yield from self._hand_out(ticket, Update("queued", position=pos), None)
            pos = self.lane.wait(ticket, 0.5)
        if cancel.is_set():
            raise RunError("cancelled", "Stopped before it started.")

    def _hand_out(self, ticket, update: Update, trace):
        """Yield one update; if nobody asked for the next one in time, the lane moved on: stop."""
        self.lane.suspend(ticket)
        yield update
        if not self.lane.resume(ticket):
            raise RunError("cancelled", "Stopped: nobody was reading this run's updates.", trace)

    def _failure(self, exc: Exception, model_id, trace: dict | None, timed_out: bool, hint: str | None) -> RunError:
        """What the visitor is told of a run that raised `exc` (`hint`: what to change when it timed out
        after it started; None: it timed out before); the unexpected ones are logged here."""
        if isinstance(exc, speculative.Cancelled):
            if timed_out:
                hint = hint or "loading the model and reading the prompt count towards it; try again"
                return RunError("timeout", f"Stopped at the time limit of {self.time_limit_s:g} s per run "
                                f"({hint}).", trace)
            return RunError("cancelled", "Stopped.", trace)
        if isinstance(exc, ModelLoadError):
            log.warning("model %r unavailable: %s", model_id, exc)
            return _unavailable(exc, trace)
        if isinstance(exc, OptTreeError):
            return RunError("bad_input", str(exc), trace)
        if _is_oom(exc):
            _free_memory()
            return RunError("oom", "Out of memory for this run: try fewer nodes, a smaller max depth "
                            "or fewer new tokens.", trace)
        log.error("run failed (model=%r)", model_id, exc_info=exc)
        return RunError("internal", f"The run failed unexpectedly ({type(exc).__name__}); "
                        "the error was logged on the server.", trace)

    def run(self, model_id, prompt, settings: dict, cancel: threading.Event | None = None) -> dict:
        """The finished trace of one run (blocking); raises RunError like `stream`."""
        last = None
        for update in self.stream(model_id, prompt, settings, cancel):
            last = update
        return last.trace
