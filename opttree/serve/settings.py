"""The app server's settings: read from the environment once, when the app starts.

| variable | meaning | default |
| --- | --- | --- |
| GRADIO_SERVER_NAME / GRADIO_SERVER_PORT | where the page is served | 127.0.0.1 / 7860 |
| OPTTREE_LANE_SLOTS | model runs at a time | 1 |
| OPTTREE_MAX_WAITING | runs that may wait for the lane (beyond: Gradio's queue) | 32 |
| OPTTREE_QUEUE_SIZE | Gradio's queue size | 64 |
| OPTTREE_RUN_TIME_LIMIT | seconds a run may take, loading and prefill included | 180 |
| OPTTREE_DEVICE | where models run: auto, cpu, cuda, cuda:N | auto |
| OPTTREE_MODELS | the model allow-list (`opttree.paths.models_file`) | the bundled list |
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from opttree.errors import BadInput


@dataclass(frozen=True)
class ServerSettings:
    server_name: str = "127.0.0.1"
    server_port: int = 7860
    lane_slots: int = 1
    max_waiting: int = 32
    queue_size: int = 64
    run_time_limit_s: float = 180.0
    device: str = "auto"

    @classmethod
    def from_env(cls, environ=None) -> ServerSettings:
        env = os.environ if environ is None else environ

        def number(var, kind, default, lo):
            raw = env.get(var)
            if raw in (None, ""):
                return default
            try:
                value = kind(raw)
            except ValueError:
                raise BadInput(f"{var} must be a {kind.__name__}, got {raw!r}.") from None
            if not value >= lo:
                raise BadInput(f"{var} must be at least {lo}, got {raw!r}.")
            return value

        return cls(server_name=env.get("GRADIO_SERVER_NAME") or cls.server_name,
                   server_port=number("GRADIO_SERVER_PORT", int, cls.server_port, 0),
                   lane_slots=number("OPTTREE_LANE_SLOTS", int, cls.lane_slots, 1),
                   max_waiting=number("OPTTREE_MAX_WAITING", int, cls.max_waiting, 0),
                   queue_size=number("OPTTREE_QUEUE_SIZE", int, cls.queue_size, 1),
                   run_time_limit_s=number("OPTTREE_RUN_TIME_LIMIT", float, cls.run_time_limit_s, 1.0),
                   device=env.get("OPTTREE_DEVICE") or cls.device)
