"""The JSON card beside each draft, and τ measured with the real decoding loop on the eval set."""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import torch
from tqdm import tqdm

from opttree import paths
from opttree.config import BUNDLED_ID, DecodeConfig
from opttree.decoding.prompts import round_robin
from opttree.drafters.registry import TRAINING_KINDS, load_pair
from opttree.drafters.tree_temperature import for_decoding
from opttree.engine.cost import draft_kernel
from opttree.engine.speculative import run
from opttree.errors import BadInput, guarded
from opttree.models.draft_assets import ACCEPTANCE_KEY
from opttree.train import spec_bench
from opttree.train.acceptance import measure_acceptance
from opttree.train.common import MEASURE_DEVICE, device_arg
from opttree.train.prompts import FIT_PARTS, LONG_INPUT_PROMPTS, train_prompts

# A draft kind (`python -m opttree.train --kind`) -> the drafter that decodes with it, its bundled file.
KINDS = {name: (kind.name, kind.bundled_path) for name, kind in TRAINING_KINDS.items()}

EVAL_SET = paths.EVAL_PROMPTS


def eval_questions(path: str | Path = EVAL_SET) -> list[dict]:
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def eval_subset(n: int, path: str | Path = EVAL_SET) -> list[dict]:
    """`n` first-turn questions, round-robin over categories (so a subset stays balanced)."""
    return round_robin(eval_questions(path), lambda q: q["category"], n)


def measure_tau(pair, n_prompts: int, decode=None, questions: list[dict] | None = None) -> dict:
    """τ with the real decoding loop on the first turn of `questions` (default: `n_prompts` eval
    questions, round-robin over categories)."""

    cfg = decode or DecodeConfig(method="opt-tree", nodes=60, threshold=0.5, max_depth=10,
                                 max_new_tokens=128, temperature=0.0)
    per, tokens, steps, ea, acc = [], 0, 0, 0.0, 0
    t0 = time.time()
    qs = eval_subset(n_prompts) if questions is None else questions
    for q in tqdm(qs, desc=f"tau {pair.drafter_kind}", unit="prompt"):
        s = run(pair, q["turns"][0], cfg)["summary"]
        ea += s["mean_expected_accept"] * s["steps"]
        acc += s["mean_accepted_draft_tokens"] * s["steps"]
        per.append({"question_id": q["question_id"], "category": q["category"], "tau": s["tau"],
                    "new_tokens": s["new_tokens"], "steps": s["steps"], "tokens_per_s": s["tokens_per_s"]})
        tokens += s["new_tokens"]
        steps += s["steps"]
    cats: dict[str, list[int]] = {}
    for p in per:
        c = cats.setdefault(p["category"], [0, 0])
        c[0] += p["new_tokens"]
        c[1] += p["steps"]
    return {"tau": round(tokens / max(1, steps), 3),
            "tau_by_category": {k: round(v[0] / max(1, v[1]), 3) for k, v in cats.items()},
            "tau_mean_of_prompts": round(sum(p["tau"] for p in per) / max(1, len(per)), 3),
            "n_prompts": len(per), "new_tokens": tokens, "target_forwards": steps,
            "mean_expected_accept": round(ea / max(1, steps), 3),  # E(A) per step, from p̂
            "mean_accepted_draft_tokens": round(acc / max(1, steps), 3),   # A per step, what happened
            "wall_s": round(time.time() - t0, 1), "decode": cfg.to_dict(),
            "tree_temperature": for_decoding(pair, cfg), "per_prompt": per}


def evenly_spaced(items: list, n: int) -> list:
    """At most `n` of `items`, evenly spaced from the first to the last."""
    return [items[round(j * (len(items) - 1) / max(1, n - 1))] for j in range(min(n, len(items)))]


def heldout_questions(n: int, sharegpt: int = 0) -> list[dict]:
    """`n` held-out training prompts spread over the parts in FIT_PARTS, as eval-style questions, then
    `sharegpt` held-out real users' first turns (sharegpt_questions): the tree temperature is fitted on
    these, never on the eval set."""

    prompts = train_prompts()
    held = [i for i, p in enumerate(prompts) if p.heldout and p.part in FIT_PARTS]
    own = [{"question_id": i, "category": "heldout", "turns": [prompts[i].text]} for i in evenly_spaced(held, n)]
    return own + (sharegpt_questions(sharegpt) if sharegpt else [])


FIT_TURN_CHARS = 6000   # a fit turn stays well inside the prompt limit (decoding/prompts.py) at ~4 chars a token


def sharegpt_questions(n: int) -> list[dict]:
    """`n` opening user turns of held-out ShareGPT conversations (train/sharegpt.py: never trained on),
    evenly spaced over those in file order whose opening turn has at most FIT_TURN_CHARS characters: what
    real users write first, pasted passages included. Only a conversation's first part counts (the later
    parts of a split conversation open mid-dialogue, with no context to answer from)."""
    from opttree.train.sharegpt import base_id, conversations  # the training-only ShareGPT package, read when asked

    turns = [(c.id, c.turns[0][1]) for c in conversations()
             if c.heldout and c.id in (base_id(c.id), base_id(c.id) + "_0") and len(c.turns[0][1]) <= FIT_TURN_CHARS]
    if len(turns) < n:
        raise BadInput(f"only {len(turns)} held-out ShareGPT turns fit; asked for {n}.")
    return [{"question_id": cid, "category": "sharegpt-heldout", "turns": [text]}
            for cid, text in evenly_spaced(turns, n)]


TEMPERATURE_GRID = (1.0, 0.85, 0.7, 0.6, 0.5)


def fit_tree_temperature(pair, n_prompts: int = 12, grid=TEMPERATURE_GRID, sharegpt: int = 0) -> dict:
    """τ on held-out prompts (`n_prompts` training prompts and `sharegpt` real users' turns) at each
    tree temperature (T = 0, the card's decode settings); the best pooled τ wins, ties going to the
    temperature closest to 1."""
    qs = heldout_questions(n_prompts, sharegpt)
    runs = {}
    for t in grid:
        pair.tree_temperature = t
        runs[t] = measure_tau(pair, len(qs), questions=qs)
    best = max(grid, key=lambda t: (runs[t]["tau"], -abs(1.0 - t)))
    pair.tree_temperature = best
    return {"tree_temperature": best, "heldout_prompts": [q["question_id"] for q in qs],
            "tau_by_temperature": {str(t): runs[t]["tau"] for t in grid},
            **({"tau_by_source": {str(t): runs[t]["tau_by_category"] for t in grid}} if sharegpt else {}),
            "expected_vs_actual_accept": {str(t): [runs[t]["mean_expected_accept"],
                                                   runs[t]["mean_accepted_draft_tokens"]] for t in grid}}


SET_KEYS = {"eval": "tau_eval", "final": "tau_final", "long-input": "tau_long_input", "public": "tau_public"}


def paired_difference(base: dict, new: dict) -> dict:
    """`new`'s per-prompt τ minus `base`'s (two cards' results on one set) over the prompts both
    measured: the mean with one standard error, and how many prompts went up and down. Two drafts
    are compared this way, prompt by prompt, before one replaces the other."""
    before = {p["question_id"]: p["tau"] for p in base["per_prompt"]}
    diffs = [p["tau"] - before[p["question_id"]] for p in new["per_prompt"] if p["question_id"] in before]
    if len(diffs) < 2:
        raise SystemExit("a paired comparison needs two or more prompts measured in both cards.")
    mean = sum(diffs) / len(diffs)
    se = (sum((d - mean) ** 2 for d in diffs) / (len(diffs) - 1) / len(diffs)) ** 0.5
    return {"n": len(diffs), "mean": round(mean, 3), "se": round(se, 3), "tau": [base["tau"], new["tau"]],
            "up": sum(d > 0 for d in diffs), "down": sum(d < 0 for d in diffs)}


def machine() -> str:
    return f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPU cores, torch {torch.__version__}"


def write_card(path: str | Path, card: dict) -> Path:
    path = Path(path)
    card = {"machine": machine(), **card}
    path.write_text(json.dumps(card, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def fit_args(ap, default: int) -> None:
    """`--fit-temperature` and `--fit-sharegpt`, the same for the training command (which fits after
    training, by default) and the card command (which fits only when asked)."""
    ap.add_argument("--fit-temperature", type=int, default=default, metavar="N",
                    help=f"fit the tree temperature on N held-out training prompts (default {default}; "
                         "0: skip); measured on the CPU whatever --device says")
    ap.add_argument("--fit-sharegpt", type=int, default=0, metavar="N",
                    help="with --fit-temperature: also on N held-out real users' opening turns (ShareGPT; needs "
                         "requirements-train.txt); the shipped cards' fits read 12 of each")


def record_fit(pair, card: dict, n: int, sharegpt: int = 0) -> dict:
    """Fit the tree temperature on `n` held-out training prompts (and `sharegpt` held-out ShareGPT opening
    turns) and put it, with what it ran on, into `card`."""
    fit = fit_tree_temperature(pair, n, sharegpt=sharegpt)
    fit.update(provenance(pair))
    card["tree_temperature"], card["tree_temperature_fit"] = fit["tree_temperature"], fit
    return fit


def record_tau(pair, card: dict, key: str = "tau_eval", n: int = 0, questions: list[dict] | None = None) -> dict:
    """τ on `questions` (default: `n` eval prompts, round-robin over categories), with what it ran on, as the
    card's `key` (SET_KEYS' values)."""
    result = measure_tau(pair, n, questions=questions)
    result.update(provenance(pair))
    card[key] = result
    return result


def provenance(pair) -> dict:
    """What a measurement ran on: the draft's kernel ("int8" under OPTTREE_DRAFT_INT8=1), what its LM-head
    rows ran on (bf16 on CPUs that multiply it natively, nets/few_row_linear.py) and the device."""
    ran = draft_kernel(pair.draft_model)
    return {"draft_kernel": ran["draft_kernel"], "draft_rows": ran["draft_rows"], "device": str(pair.device)}


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kind", choices=list(KINDS), required=True)
    ap.add_argument("--draft", default=None)
    ap.add_argument("--target", default=BUNDLED_ID)
    ap.add_argument("--prompts", type=int, default=10, help="eval prompts to measure (round-robin over categories)")
    ap.add_argument("--set", choices=list(SET_KEYS), default="eval",
                    help="final: all of final.jsonl, the set no design decision has seen; recorded as tau_final. "
                         "long-input: all of long_input.jsonl (long pasted passages), reported apart as "
                         "tau_long_input. "
                         "public: MT-bench's 80 questions from Spec-Bench's file (--questions), an acceptance set "
                         "nobody here wrote; recorded as tau_public")
    ap.add_argument("--questions", default=str(spec_bench.DEFAULT_PATH),
                    help="--set public: Spec-Bench's question.jsonl (checked against its pinned sha256)")
    ap.add_argument("--threads", type=int, default=2)
    device_arg(ap, default=MEASURE_DEVICE)
    fit_args(ap, default=0)
    ap.add_argument("--acceptance", type=int, default=0, metavar="N",
                    help="only measure the acceptance by rank (Sequoia's vector, train/acceptance.py) on N held-out "
                         "training prompts and store it in the card as acceptance_by_rank; τ is not measured")
    ap.add_argument("--compare", default=None, metavar="CARD",
                    help="measure nothing: print the draft's card's τ on --set against this other card's, "
                         "prompt by prompt (mean difference ± one standard error, prompts up and down)")
    return ap


def main(argv=None):
    """Re-measure τ for a shipped draft and update its card:
    python -m opttree.train.card --kind head --prompts 10
    or measure its acceptance by rank (Sequoia's vector) on held-out training prompts instead:
    python -m opttree.train.card --kind head --acceptance 16
    or compare a candidate's measured τ with the shipped draft's, prompt by prompt:
    python -m opttree.train.card --kind head --draft cand.safetensors \\
        --compare opttree/assets/drafts/smollm2-eagle-head.json"""
    args = _parser().parse_args(argv)
    drafter, bundled = KINDS[args.kind]
    draft = Path(args.draft or bundled)
    card_path = draft.with_suffix(".json")
    if args.compare:
        key = SET_KEYS[args.set]
        base, mine = (json.loads(Path(c).read_text()) for c in (args.compare, card_path))
        if missing := [str(c) for c, card in ((args.compare, base), (card_path, mine)) if key not in card]:
            raise SystemExit(f"no {key} in {', '.join(missing)}: measure it first (--set {args.set}).")
        diff = paired_difference(base[key], mine[key])
        print(json.dumps({"set": args.set, "base": args.compare, "draft": str(draft), **diff}))
        return diff
    if args.set == "public" and not args.acceptance:    # the file is checked before a model loads
        try:
            public = spec_bench.subset(spec_bench.read(args.questions), "mt-bench")
        except BadInput as exc:
            raise SystemExit(f"error: {exc}") from None
    torch.set_num_threads(args.threads)
    pair = load_pair(args.target, drafter=drafter, draft=str(draft), device=args.device)
    card = json.loads(card_path.read_text()) if card_path.exists() else {}
    if args.acceptance:
        fit = measure_acceptance(pair, heldout_questions(args.acceptance), log=print)
        card[ACCEPTANCE_KEY], card[ACCEPTANCE_KEY + "_fit"] = fit["acceptance_by_rank"], fit
        write_card(card_path, card)
        print(json.dumps({k: fit[k] for k in ("acceptance_by_rank", "conditional", "rows", "wall_s")}))
        return
    if args.fit_temperature:
        fit = record_fit(pair, card, args.fit_temperature, args.fit_sharegpt)
        print(json.dumps(fit["tau_by_temperature"]), flush=True)
    if args.set != "eval":          # a whole set, dated; the public one names its source file
        questions = public if args.set == "public" else eval_questions(
            paths.FINAL_PROMPTS if args.set == "final" else LONG_INPUT_PROMPTS)
        result = record_tau(pair, card, SET_KEYS[args.set], questions=questions)
        result["date"] = time.strftime("%Y-%m-%d")
        if args.set == "public":
            result["source"] = {**spec_bench.SOURCE, "subset": "mt-bench, first turns"}
    else:
        card.pop("machine", None)
        result = record_tau(pair, card, n=args.prompts)
    write_card(card_path, card)
    print(json.dumps({k: result[k] for k in ("tau", "tau_mean_of_prompts", "n_prompts", "wall_s")}))


if __name__ == "__main__":
    raise SystemExit(guarded(main))
