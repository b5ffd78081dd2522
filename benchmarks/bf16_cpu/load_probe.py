"""What a bf16 load of the bundled pair builds, and what a converted cache whose config still names GGUF
quantization changes: module dtypes, quantizer, hooks, subnormal weights; logits and forward time.

    PYTHONPATH=. python benchmarks/bf16_cpu/load_probe.py
"""

import collections
import json
import tempfile
import time
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM

from opttree.drafters.registry import load_pair
from opttree.models import bundled

torch.set_num_threads(1)
pair = load_pair("smollm2-135m-instruct", drafter="eagle", device="cpu", dtype="bf16")
for name, m in (("target", pair.target), ("draft", pair.draft_model)):
    params = collections.Counter(str(p.dtype) for p in m.parameters())
    buffers = {n: str(b.dtype) for n, b in m.named_buffers() if b.is_floating_point()}
    hooks = sum(bool(s._forward_hooks or s._forward_pre_hooks or hasattr(s, "_hf_hook")) for s in m.modules())
    tiny = torch.finfo(torch.bfloat16).tiny
    sub = sum(int(((p.float().abs() > 0) & (p.float().abs() < tiny)).sum()) for p in m.parameters())
    print(name, type(m).__name__, dict(params), "float buffers", buffers, "quantizer",
          type(getattr(m, "hf_quantizer", None)).__name__, "hooked modules", hooks, "subnormal weights", sub)

cache = bundled.converted_dir()
with tempfile.TemporaryDirectory() as tmp:
    stale = Path(tmp)
    for f in cache.iterdir():
        if f.name != "config.json":
            (stale / f.name).symlink_to(f)
    config = json.loads((cache / "config.json").read_text())
    config["quantization_config"] = {"quant_method": "gguf", "gguf_file": bundled.GGUF_NAME, "dequantize": False}
    (stale / "config.json").write_text(json.dumps(config))
    ids = torch.arange(1000, 1032)[None]
    for label, folder in (("clean cache", cache), ("config naming GGUF", stale)):
        m = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.bfloat16).eval()
        with torch.inference_mode():
            logits = m(ids).logits
            t0 = time.perf_counter()
            for _ in range(3):
                m(ids)
            ms = (time.perf_counter() - t0) / 3 * 1e3
        kinds = collections.Counter(type(s).__name__ for s in m.modules()).most_common(3)
        print(f"{label}: quantizer {type(getattr(m, 'hf_quantizer', None)).__name__}, "
              f"{dict(collections.Counter(str(p.dtype) for p in m.parameters()))}, modules {kinds}, "
              f"{ms:.1f} ms a forward of 32 tokens, logits sum {logits.float().sum().item():.1f}")
