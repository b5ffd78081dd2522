"""A stand-in for a CUDA device on a machine without one: `FakeCuda` tensors hold their values on the CPU
but say they are on "cuda", so the engine's CUDA code paths run here, with CUDA's placement rules
enforced and every read of device values by the host counted.

- `on_device(model)` moves a model's weights there; a factory given `device="cuda"` (torch.tensor,
  torch.arange, ...) and `.to("cuda")` make FakeCuda tensors too (while `fake_cuda()` is active), and
  every result computed from one is one.
- Mixing raises as CUDA does: an op that combines a FakeCuda tensor with a host tensor of one or more
  dimensions (a host scalar is allowed, as on CUDA), and a host tensor indexed by a FakeCuda index.
  A device tensor indexed by host indices is allowed (CUDA copies them over).
- `FakeCuda.reads` counts host reads of device values (`.cpu()`, `.to("cpu")`, `.tolist()`, `.item()`,
  `int()`, `float()`, `bool()`, `.numpy()`): each is a synchronisation on a real GPU.
"""

from __future__ import annotations

import contextlib

import torch
from torch.overrides import TorchFunctionMode

CUDA = torch.device("cuda")
T = torch.Tensor
READS = {T.tolist, T.item, T.__int__, T.__float__, T.__bool__, T.__index__, T.numpy, T.cpu}
FACTORIES = {torch.tensor, torch.as_tensor, torch.zeros, torch.ones, torch.full, torch.empty, torch.arange,
             torch.eye, torch.rand, torch.randn, torch.randint, torch.linspace, torch.tril_indices}
DEVICE_GETTERS = {T.device.__get__, T.is_cuda.__get__, T.is_cpu.__get__, T.get_device}


def _is_cuda(device) -> bool:
    return device is not None and torch.device(device).type == "cuda"


def _tensors(obj):
    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for item in obj:
            yield from _tensors(item)
    elif isinstance(obj, dict):
        for item in obj.values():
            yield from _tensors(item)


def _plain(t: torch.Tensor) -> torch.Tensor:
    with torch._C.DisableTorchFunctionSubclass():
        return t.as_subclass(torch.Tensor) if type(t) is not torch.Tensor else t


class Mixed(RuntimeError):
    """What CUDA raises where a device tensor meets a host one (or a host tensor a device index)."""


class FakeCuda(torch.Tensor):
    reads = 0

    @classmethod
    def wrap(cls, t: torch.Tensor) -> FakeCuda:
        return _plain(t).as_subclass(cls)

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in DEVICE_GETTERS:
            name = getattr(func, "__name__", "")
            return {"is_cuda": True, "is_cpu": False, "get_device": 0}.get(name, CUDA) \
                if func is not T.device.__get__ else CUDA
        if func in READS:
            cls.reads += 1
            with torch._C.DisableTorchFunctionSubclass():
                out = func(*args, **kwargs)
            return _plain(out) if isinstance(out, torch.Tensor) else out
        if func is T.to:
            return cls._to(args, kwargs)
        _check_mixing(func, args, kwargs)
        return super().__torch_function__(func, types, args, kwargs)

    @classmethod
    def _to(cls, args, kwargs):
        self, rest = args[0], args[1:]
        device = kwargs.get("device")
        for a in rest:
            if isinstance(a, (str, torch.device)):
                device = a
            elif isinstance(a, torch.Tensor):
                device = a.device
        plain_args = [(_plain(a).device if isinstance(a, torch.Tensor) else
                       ("cpu" if isinstance(a, (str, torch.device)) else a)) for a in rest]
        plain_kwargs = {k: ("cpu" if k == "device" else v) for k, v in kwargs.items()}
        with torch._C.DisableTorchFunctionSubclass():
            out = _plain(self).to(*plain_args, **plain_kwargs)
        if device is not None and not _is_cuda(device):
            if isinstance(self, FakeCuda):
                cls.reads += 1
            return _plain(out)
        return cls.wrap(out) if isinstance(self, FakeCuda) or _is_cuda(device) else out


def _check_mixing(func, args, kwargs) -> None:
    if func in (T.__getitem__, T.__setitem__):
        target, index = args[0], args[1]
        if not isinstance(target, FakeCuda) and any(isinstance(t, FakeCuda) for t in _tensors(index)):
            raise Mixed(f"a host tensor indexed by a device index ({func.__name__})")
        if func is T.__setitem__ and isinstance(target, FakeCuda):
            value = args[2]
            if isinstance(value, torch.Tensor) and not isinstance(value, FakeCuda) and value.dim() > 0:
                raise Mixed("a host tensor written into a device tensor")
        return
    found = list(_tensors(args)) + list(_tensors(kwargs))
    host = [t for t in found if not isinstance(t, FakeCuda) and t.dim() > 0]
    if host and len(host) < len(found):
        raise Mixed(f"{getattr(func, '__name__', func)} combines device tensors with host tensors of shapes "
                    f"{[tuple(t.shape) for t in host]}")


class _Factories(TorchFunctionMode):
    """Factories asked for device="cuda" make FakeCuda tensors; `.to("cuda")` of a host tensor too."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in FACTORIES and _is_cuda(kwargs.get("device")):
            with torch._C.DisableTorchFunctionSubclass():
                out = func(*args, **{**kwargs, "device": "cpu"})
            return FakeCuda.wrap(out)
        if func is T.to:
            return FakeCuda._to(args, kwargs)
        return func(*args, **kwargs)


@contextlib.contextmanager
def fake_cuda():
    """Within it, device="cuda" means FakeCuda; `FakeCuda.reads` starts from 0."""
    FakeCuda.reads = 0
    with _Factories():
        yield


def on_device(model: torch.nn.Module) -> torch.nn.Module:
    """`model` with its weights and buffers as FakeCuda tensors."""
    for module in model.modules():
        for name, p in list(module._parameters.items()):
            if p is not None:
                module._parameters[name] = torch.nn.Parameter(FakeCuda.wrap(p.data), requires_grad=False)
        for name, b in list(module._buffers.items()):
            if b is not None:
                module._buffers[name] = FakeCuda.wrap(b)
    return model


def fake_pair(pair, monkeypatch):
    """A tiny CPU pair moved to the fake device: its models' weights, `pair.device` "cuda", and its cost curve
    (measured on the CPU first: the timed forwards would measure the fake device's Python overhead)."""
    from opttree.engine import cost  # the engine's cost module: only pairs moved here need its curve

    curve = cost.load_or_measure(pair)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *args: "Fake CUDA")   # the curve's key names it
    on_device(pair.target)
    if pair.draft_model is not None and pair.draft_model is not pair.target:
        on_device(pair.draft_model)
    pair.device = CUDA
    pair.cost_curve = {**curve, "key": cost.cache_key(pair)}
    return pair
