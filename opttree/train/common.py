"""Shared training helpers: target loading, checkpoints, LR schedule, export."""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path

import torch

from opttree import paths
from opttree.models.loading import load_causal_lm, resolve_device

CKPT_DIR = paths.checkpoints_dir()


def load_target(name: str, device: str = "auto"):
    """The target that data are generated from and drafts learn from, in fp32 (the dtype the bundled
    pair decodes in) on `device`: "auto" is CUDA where torch sees a GPU, else the CPU."""
    return load_causal_lm(name, resolve_device(device), torch.float32)


MEASURE_DEVICE = "cpu"   # where the commands that measure a draft run by default: the cards' figures are CPU figures


def device_arg(ap, default: str = "auto") -> None:
    """`--device`, the same for every training command (`cpu` by default for the commands that measure a
    draft: the cards' figures are CPU figures)."""
    ap.add_argument("--device", default=default,
                    help=f"auto (CUDA where a GPU is visible, else the CPU), cpu or cuda[:N] (default {default}): "
                         "where the target runs and the draft trains; data and weights are stored as CPU tensors "
                         "in the same format either way")


def lr_at(step: int, total: int, peak: float, warmup: int) -> float:
    if step < warmup:
        return peak * (step + 1) / warmup
    frac = (step - warmup) / max(1, total - warmup)
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, frac))))


def save_atomic(path: Path, obj) -> None:
    """torch.save through a temporary file: a killed run leaves the old file or the new one, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    torch.save(obj, tmp)
    os.replace(tmp, path)


def save_checkpoint(path: Path, **state) -> None:
    save_atomic(path, state)


def load_checkpoint(path: Path):
    if path.exists():    # onto the CPU: a run saved on a GPU resumes anywhere; load_state_dict moves tensors back
        return torch.load(path, map_location="cpu", weights_only=False)
    return None


def export_fp16(path: Path, tensors: dict, config: dict, extra_meta: dict | None = None) -> int:
    from safetensors.torch import save_file  # imported with the weights it reads or writes

    path.parent.mkdir(parents=True, exist_ok=True)
    out = {}
    for k, v in tensors.items():
        v = v.detach().cpu().contiguous()
        out[k] = v.to(torch.float16) if v.is_floating_point() else v
    meta = {"config": json.dumps(config)}
    meta.update({k: (v if isinstance(v, str) else json.dumps(v)) for k, v in (extra_meta or {}).items()})
    tmp = path.with_name(path.name + ".tmp")
    save_file(out, str(tmp), metadata=meta)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)
    return path.stat().st_size


class Timer:
    def __init__(self, already: float = 0.0):
        self.t0 = time.time() - already

    @property
    def elapsed(self) -> float:
        return time.time() - self.t0


class ThreadTuner:
    """Picks 1 or `max_threads` torch threads by timing, re-checked every `period` calls.

    On a 2-core machine shared with other jobs, 2 threads are ~2x faster when the machine is idle
    but up to 10x slower when another process holds a core (measured): so we keep measuring."""

    def __init__(self, max_threads: int = 2, period: int = 100, probe: int = 1):
        self.choices = sorted({1, max(1, max_threads)})
        self.period, self.probe = period, probe
        self.calls, self.times = 0, {c: [] for c in self.choices}
        self.current = self.choices[-1]
        torch.set_num_threads(self.current)

    def start(self) -> None:
        if len(self.choices) > 1:
            phase = self.calls % self.period
            if phase < self.probe * len(self.choices):
                self.current = self.choices[phase // self.probe]
                torch.set_num_threads(self.current)
        self._t = time.perf_counter()

    def stop(self, work: float = 1.0) -> None:
        dt = (time.perf_counter() - self._t) / max(work, 1e-9)
        phase = self.calls % self.period
        self.calls += 1
        if len(self.choices) == 1:
            return
        if phase < self.probe * len(self.choices):
            self.times[self.current].append(dt)
            if phase == self.probe * len(self.choices) - 1:
                best = min(self.choices, key=lambda c: sorted(self.times[c])[len(self.times[c]) // 2])
                self.times = {c: [] for c in self.choices}
                self.current = best
                torch.set_num_threads(best)


def budget_total(step: int, total: int, minutes: float, run_start_step: int, run_elapsed: float) -> int:
    """With a wall-clock budget for this invocation, re-estimate the total steps from its speed so far."""
    if not minutes or step - run_start_step < 10:
        return total
    per_step = run_elapsed / (step - run_start_step)
    left = minutes * 60 - run_elapsed
    return max(step + 1, min(total, step + int(left / per_step)))
