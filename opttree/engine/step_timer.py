"""Where a step's time goes: drafting, building the tree, verifying it, and the trace's own
bookkeeping (which no method is charged for)."""

from __future__ import annotations

import time
from contextlib import contextmanager

PHASES = ("draft", "build", "verify", "record")


class StepTimer:
    """Each phase's wall time in one step. Phases nest: entering one pauses the phase around it, so
    every moment counts for exactly one phase (the draft forwards a builder asks for are drafting,
    not building; the drafter reading the verified rows is drafting, not verifying)."""

    def __init__(self):
        self.seconds = dict.fromkeys(PHASES, 0.0)
        self._open: list[str] = []
        self._since = time.perf_counter()

    @contextmanager
    def phase(self, name: str):
        self._lap()
        self._open.append(name)
        try:
            yield
        finally:
            self._lap()
            self._open.pop()

    def _lap(self) -> None:
        now = time.perf_counter()
        if self._open:
            self.seconds[self._open[-1]] += now - self._since
        self._since = now

    def ms(self, name: str) -> float:
        return self.seconds[name] * 1e3
