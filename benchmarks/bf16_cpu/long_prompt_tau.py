"""τ of OPT-Tree in bf16 on long prompts, with the feature head's rotary frequencies fp32 (as loaded) and
rounded to bf16 (as `Module.to(bf16)` left them before `beside_target`).

    PYTHONPATH=. python benchmarks/bf16_cpu/long_prompt_tau.py
"""

import torch

from opttree.config import DecodeConfig
from opttree.drafters.registry import load_pair
from opttree.engine import speculative

torch.set_num_threads(1)
text = open("docs/usage.md").read()
cfg = DecodeConfig(method="opt-tree", nodes=60, max_depth=10, threshold=0.5, max_new_tokens=48, temperature=0.0,
                   retrieval="off")
pair = load_pair("smollm2-135m-instruct", drafter="eagle", device="cpu", dtype="bf16")
for chars in (1500, 4000):
    prompt = "Summarise this text in a few sentences.\n\n" + text[:chars]
    for label, rounded in (("fp32 freqs", False), ("bf16 freqs", True)):
        saved = {n: b.clone() for n, b in pair.draft_model.named_buffers() if n.endswith("inv_freq")}
        if rounded:
            for n, b in pair.draft_model.named_buffers():
                if n in saved:
                    b.copy_(b.to(torch.bfloat16).float())
        tr = speculative.run(pair, prompt, cfg, record_target=False)
        for n, b in pair.draft_model.named_buffers():
            if n in saved:
                b.copy_(saved[n])
        print("bf16", label, "prompt tokens", len(tr["prompt_ids"]), "tau", tr["summary"]["tau"], flush=True)
