"""Where a module of a target that `device_map` spread computes, and its weights at hand outside a forward.

accelerate hooks each module a device map places: the hook moves the module's inputs to its execution
device and, for a module offloaded to the CPU or to disk, loads its weights there for the forward only; in
between they wait on the meta device, with no data. So an offloaded weight's own device is not where its
module computes, and the weight read directly (outside the module's forward) holds nothing.
"""

from __future__ import annotations

import contextlib

import torch


def module_device(module: torch.nn.Module) -> torch.device:
    """Where `module` computes: its accelerate hook's execution device where a device map placed it, else its
    first weight's (or buffer's) device; the CPU for a module that holds neither."""
    hook = getattr(module, "_hf_hook", None)
    for one in getattr(hook, "hooks", (hook,)):     # a SequentialHook holds several
        device = getattr(one, "execution_device", None)
        if device is not None:
            return torch.device(device)             # accelerate names a GPU by its index
    held = next(module.parameters(), None)
    held = held if held is not None else next(module.buffers(), None)
    return held.device if held is not None else torch.device("cpu")


def input_device(model: torch.nn.Module) -> torch.device:
    """Where a model's inputs go: where its embedding computes (under device_map it may differ from
    `model.device`, the first weight's device, and an offloaded embedding's weight waits on meta)."""
    return module_device(model.get_input_embeddings())


def weights_at_hand(module: torch.nn.Module):
    """A context in which `module`'s own weights hold their data on its execution device: an offloaded
    module's are loaded for it, as its hook loads them for a forward; any other module's are as they are."""
    if getattr(module, "_hf_hook", None) is None:
        return contextlib.nullcontext()
    from accelerate.utils import align_module_device  # only a module accelerate dispatched has a hook

    return align_module_device(module)
