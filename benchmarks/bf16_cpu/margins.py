"""The runs' own logits at each first divergence of OPT-Tree from AR, and each run's error against fp32.

    PYTHONPATH=. python benchmarks/bf16_cpu/margins.py PROMPTS TOKENS NODES [DTYPE]

Runs AR and OPT-Tree (greedy, δ 0.5, depth ≤ 10, retrieval off) on the eval file's first PROMPTS prompts.
A wrapper around `TargetState.verify` records, for every committed token, the top-1 and top-2 logits of
the row it was picked from: AR's one-token forward, or the tree forward's row of its parent. Per prompt,
one JSON line: the first divergence (position, both tokens, each run's top-1 / top-2 there, the fp32
target's logits of both tokens over the shared prefix) and each run's mean / largest distance of its
top-1 logit from the fp32 target's logit for the same token over the same output (`*_err`), with the
number of positions where the fp32 target's argmax is another token (`*_fp32_disagree`).
"""

import json
import sys

import torch

from opttree import paths
from opttree.bench.divergence import first_divergence, last_logits
from opttree.bench.prompts import read_prompts
from opttree.config import DecodeConfig
from opttree.drafters.registry import load_pair
from opttree.engine import speculative
from opttree.engine import target_state as ts

N_PROMPTS, TOKENS, NODES = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
DTYPE = sys.argv[4] if len(sys.argv) > 4 else "bf16"
torch.set_num_threads(1)
rec = []
verify = ts.TargetState.verify


def recording_verify(self, tree, picker, timer, drafted):
    accepted, bonus, rejected, logits = verify(self, tree, picker, timer, drafted)
    for r in [0] + [a + 1 for a in accepted]:   # the rows the committed tokens were picked from, in order
        v, i = logits[r].float().topk(2)
        rec.append((int(i[0]), float(v[0]), int(i[1]), float(v[1])))
    return accepted, bonus, rejected, logits


ts.TargetState.verify = recording_verify
pair = load_pair("smollm2-135m-instruct", drafter="eagle", device="cpu", dtype=DTYPE)
ref = load_pair("smollm2-135m-instruct", drafter="none", device="cpu", dtype="fp32").target


def go(method, prompt):
    rec.clear()
    cfg = DecodeConfig(method=method, nodes=NODES, max_depth=10, threshold=0.5, max_new_tokens=TOKENS,
                       temperature=0.0, retrieval="off")
    return speculative.run(pair, prompt, cfg, record_target=False), list(rec)


for p in read_prompts(paths.EVAL_PROMPTS)[:N_PROMPTS]:
    ar, ar_rec = go("ar", p.prompt)
    ot, ot_rec = go("opt-tree", p.prompt)
    a, b, prompt_ids = ar["output_ids"], ot["output_ids"], ar["prompt_ids"]
    d = first_divergence(a, b)
    row = {"prompt": p.prompt[:40], "tau": ot["summary"].get("tau"), "same": a == b, "len": (len(a), len(b))}
    with torch.inference_mode():
        if d is not None and d < min(len(a), len(b)):   # a token of each to compare (not one run ending first)
            lg = last_logits(ref, prompt_ids + a[:d])
            row.update(pos=d, ar_tok=a[d], tree_tok=b[d], ar=ar_rec[d], tree=ot_rec[d],
                       ar_margin=ar_rec[d][1] - ar_rec[d][3], tree_margin=ot_rec[d][1] - ot_rec[d][3],
                       fp32_ar_tok=float(lg[a[d]]), fp32_tree_tok=float(lg[b[d]]), fp32_top=int(lg.argmax()))
        for name, toks, rr in (("ar", a, ar_rec), ("tree", b, ot_rec)):
            lg = ref(torch.tensor([prompt_ids + toks])).logits[0, len(prompt_ids) - 1:-1].float()
            errs = [abs(rr[k][1] - float(lg[k, rr[k][0]])) for k in range(len(toks))]
            row[name + "_err"] = (round(sum(errs) / len(errs), 4), round(max(errs), 4))
            row[name + "_fp32_disagree"] = sum(int(lg[k].argmax()) != toks[k] for k in range(len(toks)))
    print(json.dumps(row), flush=True)
