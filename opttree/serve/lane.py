"""The run lane: a first-come-first-served gate with a bounded number of slots and visible positions.

Model work passes through it (runs and cost-curve measurements alike), so at most `slots` of them
use the machine at once; a waiting run reports its place in line instead of silently blocking.
"""

from __future__ import annotations

import threading
import time

STALE_S = 30.0      # seconds a ticket may hand out an update nobody collects before it loses its place


class Lane:
    """A first-come-first-served gate with `slots` concurrent holders and visible positions.

    Runs are generators, and a consumer can stop iterating without closing one (a dropped
    connection): its ticket would then block the line forever. So each run marks itself
    `suspend`ed while it hands an update out and `resume`s after; a ticket suspended for longer than
    `stale_s` loses its place or its slot, and its run stops if it is ever resumed.
    """

    def __init__(self, slots: int, stale_s: float = STALE_S):
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
