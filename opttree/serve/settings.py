"""The app server's settings: read from the environment once, when the app starts.

Each field of `ServerSettings` is declared once, with its environment variable, default, lower
bound and meaning; `from_env` and the table of variables appended to this docstring (`table()`,
what `help(opttree.serve.settings)` shows) are derived from those declarations, and every other
module reads its defaults from `ServerSettings` instead of repeating them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields

from opttree.errors import BadInput
from opttree.trace_file import MAX_TRACE_BYTES


def setting(default, env: str, meaning: str, lo=None, hi=None):
    """A server setting: its default, the environment variable that overrides it, what it means and,
    for a number, the least value allowed (and the most, where there is one)."""
    return field(default=default, metadata={"env": env, "help": meaning, "lo": lo, "hi": hi})


@dataclass(frozen=True)
class ServerSettings:
    server_name: str = setting("127.0.0.1", "GRADIO_SERVER_NAME", "the address the page is served on")
    server_port: int = setting(7860, "GRADIO_SERVER_PORT", "the port the page is served on", lo=0)
    lane_slots: int = setting(1, "OPTTREE_LANE_SLOTS", "model runs at a time", lo=1)
    max_waiting: int = setting(32, "OPTTREE_MAX_WAITING", "runs that may wait for the lane (beyond: Gradio's queue)",
                               lo=0)
    queue_size: int = setting(64, "OPTTREE_QUEUE_SIZE", "Gradio's queue size", lo=1)
    run_time_limit_s: float = setting(180.0, "OPTTREE_RUN_TIME_LIMIT",
                                      "seconds a run may take, loading and prefill included", lo=1.0)
    device: str = setting("auto", "OPTTREE_DEVICE", "where models run: auto, cpu, cuda, cuda:N")
    max_upload_mb: int = setting(MAX_TRACE_BYTES >> 20, "OPTTREE_MAX_UPLOAD_MB",
                                 "the largest file a visitor may upload (a trace to import), in MiB: a loaded trace "
                                 "holds about 3.5× its size in memory while its session lasts", lo=1,
                                 hi=MAX_TRACE_BYTES >> 20)

    @property
    def max_upload_bytes(self) -> int:
        return self.max_upload_mb << 20

    @classmethod
    def from_env(cls, environ=None) -> ServerSettings:
        """Each field from its environment variable (unset or empty: the default), checked."""
        env = os.environ if environ is None else environ
        values = {}
        for f in fields(cls):
            raw = env.get(f.metadata["env"])
            if raw not in (None, ""):
                values[f.name] = _parse(f, raw)
        return cls(**values)


def _parse(f, raw: str):
    var, kind, lo = f.metadata["env"], type(f.default), f.metadata["lo"]
    if kind is str:
        return raw
    try:
        value = kind(raw)
    except ValueError:
        raise BadInput(f"{var} must be a {kind.__name__}, got {raw!r}.") from None
    if lo is not None and not value >= lo:
        raise BadInput(f"{var} must be at least {lo}, got {raw!r}.")
    if f.metadata["hi"] is not None and not value <= f.metadata["hi"]:
        raise BadInput(f"{var} must be at most {f.metadata['hi']}, got {raw!r}.")
    return value


def _shown(value) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def table() -> str:
    """The settings as a Markdown table: variable, meaning, default (and the allow-list's variable,
    which `opttree.paths` reads)."""
    rows = [f"| {f.metadata['env']} | {f.metadata['help']} | {_shown(f.default)} |" for f in fields(ServerSettings)]
    return "\n".join(["| variable | meaning | default |", "| --- | --- | --- |", *rows,
                      "| OPTTREE_MODELS | the model allow-list (`opttree.paths.models_file`) | the bundled list |"])


__doc__ = (__doc__ or "") + "\n" + table() + "\n"   # (None under python -OO)
