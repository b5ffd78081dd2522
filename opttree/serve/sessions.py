"""What the service keeps per browser session: the cancel flags of its runs and its own Token
Recycling tables.

Closing a tab sets the flags of that session's runs, a tab's Stop those it started (its scope); a session's tables
(`recycling_scope: session`) are keyed by that session, bounded (least recently used dropped first),
dropped when the tab closes and never handed to another session.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from opttree.config import DecodeConfig
from opttree.drafters.context import DraftContext
from opttree.drafters.recycling import RecyclingTable

SESSION_TABLES = 32     # Token Recycling tables kept for browser sessions (least recently used dropped first)


class Sessions:
    def __init__(self):
        self._cancels: dict[tuple[str, str], set] = {}      # (session, scope) -> cancel flags
        self._lock = threading.Lock()
        self.tables: OrderedDict[tuple, RecyclingTable] = OrderedDict()   # (session, target) -> table

    def register(self, session: str | None, flag: threading.Event, scope: str = "") -> None:
        """Keep a run's cancel flag under its session and scope (the page's tab that started it)."""
        if session:
            with self._lock:
                self._cancels.setdefault((session, scope), set()).add(flag)

    def unregister(self, session: str | None, flag: threading.Event, scope: str = "") -> None:
        if session:
            with self._lock:
                flags = self._cancels.get((session, scope))
                if flags:
                    flags.discard(flag)
                    if not flags:
                        del self._cancels[(session, scope)]

    def cancel(self, session: str | None, scope: str | None = None) -> int:
        """Stop the runs of one browser session (of one scope, or with None of every scope); returns how
        many were signalled."""
        with self._lock:
            flags = [f for (s, sc), fs in self._cancels.items() if s == session and scope in (None, sc) for f in fs]
        for f in flags:
            f.set()
        return len(flags)

    def end(self, session: str | None) -> None:
        """A closed tab: stop its runs and forget its Token Recycling tables."""
        self.cancel(session)
        with self._lock:
            for key in [k for k in self.tables if k[0] == session]:
                del self.tables[key]

    def table(self, session: str, target: str, vocab_size: int) -> RecyclingTable:
        """This session's recycling table for `target` (created empty; only this session gets it)."""
        key = (session, target)
        with self._lock:
            table = self.tables.get(key)
            if table is None or table.vocab_size != vocab_size:
                table = self.tables[key] = RecyclingTable(vocab_size)
            self.tables.move_to_end(key)
            while len(self.tables) > SESSION_TABLES:
                self.tables.popitem(last=False)
            return table

    def context(self, pair, cfg: DecodeConfig, session: str | None) -> DraftContext:
        """What this run's drafter may keep: a session's table only for that session's own runs."""
        if pair.drafter_kind == "recycling" and cfg.recycling_scope == "session" and session:
            return DraftContext(table=self.table(session, pair.target_name, pair.target.config.vocab_size))
        return DraftContext()
