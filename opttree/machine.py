"""What machine this is: the CPU's name and widest instruction set, read once from /proc/cpuinfo.

The measured costs (engine/cost.py) and the CPU kernel choice (nets/few_row_linear.py) both depend on
it, so both key their caches by it.
"""

from __future__ import annotations

import functools
import platform


@functools.cache
def _cpuinfo() -> str | None:
    """/proc/cpuinfo, read once per process (None where there is none)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            return f.read()
    except OSError:
        return None


def cpu_name() -> str:
    for line in (_cpuinfo() or "").splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown CPU"


@functools.cache
def _own_flags() -> frozenset[str]:
    return frozenset(_flags(_cpuinfo() or ""))


def _flags(cpuinfo: str | None) -> set[str] | frozenset[str]:
    """The first CPU's feature flags in /proc/cpuinfo (read once; or in the text given)."""
    if cpuinfo is None:
        return _own_flags()
    for line in (cpuinfo or "").splitlines():
        if line.startswith(("flags", "Features")):
            return set(line.split(":", 1)[1].split())
    return set()


def native_bf16(cpuinfo: str | None = None) -> bool:
    """Whether the CPU multiplies bf16 natively (AVX512-BF16's dot products or AMX's bf16 tiles); on
    other CPUs oneDNN emulates bf16, and it is no faster than fp32."""
    return bool(_flags(cpuinfo) & {"avx512_bf16", "amx_bf16"})


def cpu_isa(cpuinfo: str | None = None) -> str:
    """The widest vector instruction set the CPU reports (amx, avx512, avx2, avx or base): the matrix
    kernels change with it, so two hosts that share a model name ("AMD EPYC" on a VM) but not an
    instruction set have different costs. Read from /proc/cpuinfo (or the text given); the machine's
    architecture where there is none."""
    flags = _flags(cpuinfo)
    for isa, flag in (("amx", "amx_tile"), ("avx512", "avx512f"), ("avx2", "avx2"), ("avx", "avx")):
        if flag in flags:
            return isa
    return "base" if flags else (platform.machine() or "unknown")
