"""What a benchmark ran on: CPU/GPU, threads, library versions, date — recorded in every result."""

from __future__ import annotations

import datetime as dt
import os
import platform
import subprocess
import sys

import torch
from tqdm import tqdm

from opttree.engine.cost import load_average
from opttree.machine import cpu_isa
from opttree.machine import cpu_name as proc_cpu_name

NOISE_NOTE = ("a shared VM: timings are noisy (other jobs may use the same cores; the load average says "
              "how busy it was); methods ran interleaved per prompt in one process, so compare ratios, "
              "not absolute times.")


def cpu_name() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=5).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return proc_cpu_name()


def machine_info(device) -> dict:
    import transformers  # only for the version string; heavy to import

    dev = torch.device(device) if not isinstance(device, torch.device) else device
    info = {
        "date_utc": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": cpu_name(), "cpu_isa": cpu_isa(), "cpu_count": os.cpu_count(), "torch_threads": torch.get_num_threads(),
        "torch": torch.__version__, "transformers": transformers.__version__,
        "python": platform.python_version(), "device": str(dev),
        "gpu": torch.cuda.get_device_name(dev) if dev.type == "cuda" else None,
        "load_avg_at_start": load_average(),
        "noise": NOISE_NOTE,
    }
    return info


def note_load(info: dict) -> dict:
    if (load := load_average()) is not None:
        info["load_avg_at_end"] = load
    return info


def progress_bar(items=None, unit: str = "runs", total: int | None = None):
    """A progress bar with an ETA on a terminal (stderr) over `items`, or over `total` steps counted
    with `.update()`; silent when stderr is a file or a pipe."""
    return tqdm(items, total=total, unit=unit[:-1] if unit.endswith("s") else unit, desc=unit, file=sys.stderr,
                disable=not sys.stderr.isatty(), dynamic_ncols=True)
