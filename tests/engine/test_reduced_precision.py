"""Reduced precision: drafts beside a bf16 target (their weights in its dtype, their rotary frequencies fp32),
and how a bf16 run's departures from AR's greedy output are judged (opttree/bench/divergence.py)."""

from __future__ import annotations

import copy
import json

import pytest
import torch
from safetensors.torch import save_file
from tiny import tiny_llama, tiny_pair

from opttree.bench import divergence, gpu_check
from opttree.bench.divergence import divergence_at, divergences, first_divergence
from opttree.bench.prompts import parse_prompts
from opttree.config import RANDOM_HEAD, DecodeConfig
from opttree.models.draft_assets import load_bundled_classic, load_exit_head, load_feature_head


def rotary_buffers(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {name: buf for name, buf in model.named_buffers() if name.endswith("inv_freq")}


def fp32_frequencies(config) -> torch.Tensor:
    """RoPE's inverse frequencies as transformers computes them (default rope), in fp32."""
    dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    theta = config.rope_parameters["rope_theta"]
    return 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.float) / dim))


def classic_file(tmp_path, target) -> str:
    """A one-layer classic draft file as python -m opttree.train writes one (its config in the metadata)."""
    draft = tiny_llama(1, layers=1)
    path = tmp_path / "classic.safetensors"
    save_file({k: v.contiguous() for k, v in draft.state_dict().items()}, str(path),
              metadata={"config": json.dumps(draft.config.to_dict())})
    return str(path)


@pytest.mark.parametrize("kind", ["eagle", "early-exit", "classic"])
def test_a_draft_beside_a_bf16_target_keeps_its_rotary_frequencies_fp32(kind, tmp_path):
    """`Module.to(bf16)` rounds a rotary embedding's `inv_freq` to 8 bits too, which moves the draft's
    RoPE angle at position 500 by up to 0.69 rad from the fp32 one it was trained with (the SmolLM2
    head's frequencies); transformers keeps them fp32 in a model of any dtype, and so do the loaders."""
    target = tiny_llama().to(torch.bfloat16)
    if kind == "eagle":
        draft = load_feature_head(RANDOM_HEAD, target)
    elif kind == "early-exit":
        draft = load_exit_head(RANDOM_HEAD, target, 1)
    else:
        draft = load_bundled_classic(classic_file(tmp_path, target), target)
    assert {p.dtype for p in draft.parameters()} == {torch.bfloat16}
    buffers = rotary_buffers(draft)
    assert buffers, "the draft has a rotary embedding"
    want = fp32_frequencies(target.config)
    assert not torch.equal(want.to(torch.bfloat16).float(), want)   # bf16 would round them
    for name, buf in buffers.items():
        assert buf.dtype == torch.float32, name
        assert torch.equal(buf, want), name


# --- exactness in reduced precision: where a run leaves AR's output, and whether the target nearly tied there

PROMPT = [3, 4, 5, 6]
MT = '{"question_id": 1, "category": "math", "turns": ["t3 t4 t5 t6"]}\n'


def tied(model, a: int, b: int):
    """A copy of `model` whose LM head scores tokens a and b alike (their rows equal)."""
    model = copy.deepcopy(model)
    with torch.no_grad():
        model.lm_head.weight[b] = model.lm_head.weight[a]
    return model


def test_first_divergence():
    assert first_divergence([1, 2, 3], [1, 2, 3]) is None
    assert first_divergence([1, 2, 3], [1, 5, 3]) == 1
    assert first_divergence([1, 2], [1, 2, 3]) == 2        # one ends where the other goes on
    assert first_divergence([], [4]) == 0


def test_a_divergence_is_a_near_tie_only_within_what_the_dtype_gets_wrong():
    """At a clear margin (AR's token the target's top, the other its last) the divergence is flagged as
    not a near-tie, with the fp32 gap the logits give; two tokens the LM head scores alike are a near-tie,
    in fp32 and beside a bf16 copy of the target, whose error there is part of the noise."""
    target = tiny_llama(scale=4.0)
    logits = target(input_ids=torch.tensor([PROMPT])).logits[0, -1]
    a, b = int(logits.argmax()), int(logits.argmin())
    clear = divergence_at(target, target, PROMPT, [a, 7], [b, 7])
    assert clear["position"] == 0 and (clear["ar_token"], clear["other_token"]) == (a, b)
    assert clear["gap_fp32"] == pytest.approx(float(logits[a] - logits[b])) and clear["gap_fp32"] > 1
    assert clear["gap"] == clear["gap_fp32"] and clear["noise"] == clear["spacing"] < 1e-5   # fp32 against itself
    assert not clear["near_tie"] and clear["fp32_rank_of_other"] == logits.numel() - 1
    assert divergence_at(target, target, PROMPT, [a, 7], [a, 7]) is None
    assert divergence_at(target, target, PROMPT, [a], [a, 7]) is None        # one ended: no token to compare
    same = tied(target, a, b)
    tie = divergence_at(same, same, PROMPT, [a], [b])
    assert tie["gap_fp32"] == 0 and tie["near_tie"]
    half = divergence_at(copy.deepcopy(same).to(torch.bfloat16), same, PROMPT, [a], [b])
    assert half["gap_fp32"] == 0 and half["near_tie"] and half["noise"] >= half["spacing"] > 1e-3   # bf16's step


def test_divergences_of_a_bench_result_and_the_gpu_reports_list_of_them():
    """Each run of a bench result that left AR's output, judged at its first divergence (the prompt
    encoded as the bench encodes it), and the GPU check's report of them."""
    pair = tiny_pair("classic", draft_is_target=True)
    logits = pair.target(input_ids=torch.tensor([PROMPT])).logits[0, -1]
    a, b = int(logits.argmax()), int(logits.argmin())
    runs = [{"prompt_id": "1", "method": "ar", "output_ids": [a, 9]},
            {"prompt_id": "1", "method": "opt-tree@60", "output_ids": [a, 9]},
            {"prompt_id": "1", "method": "chain", "output_ids": [b, 9]}]
    prompts = parse_prompts(MT)
    rows = divergences(pair, pair.target, prompts, {"runs": runs})
    assert [(r["prompt_id"], r["method"], r["position"], r["near_tie"]) for r in rows] == [("1", "chain", 0, False)]
    cfg = DecodeConfig(method="ar", nodes=0, max_new_tokens=4)
    checked = gpu_check.check_dtype(pair, prompts, cfg, reference=pair.target)
    assert checked["divergences"] == []                      # fp32 against itself: every run is AR's output
    checked["divergences"] = rows
    text = gpu_check.report("Tiny CPU", "2026-01-01", None, {"bf16": checked}, cfg, 1)
    assert "bf16: 1 divergences: 0 near-tie, 0 within rounding, 1 clear margin" in text
    assert f"1 | chain | 0 | {a} / {b} | +{rows[0]['gap_fp32']:.4f}" in text and "| CLEAR MARGIN" in text


@pytest.mark.parametrize("ref_a, ref_b, verdict", [(10.30, 10.25, "near-tie"), (10.55, 10.30, "within rounding"),
                                                   (12.0, 10.0, "clear margin")])
def test_an_error_both_logits_share_does_not_make_a_near_tie(monkeypatch, ref_a, ref_b, verdict):
    """The run's dtype put AR's token 0.25 above the other (10.25 and 10.0, bf16's step there 0.0625). Where
    fp32 has them 0.05 apart, this forward erred by 0.2 in the gap: a near-tie. Where fp32 shifts both by 0.3
    (gap 0.25 in both), the forward got the gap right, and only the logits' summed errors (0.66) cover it:
    within rounding, to confirm from the run's own rows, not a near-tie (failed before: called one, as the
    summed errors were the only bound). Beyond even that bound, a clear margin."""
    run_model, ref_model = torch.nn.Linear(1, 1).to(torch.bfloat16), torch.nn.Linear(1, 1)
    logits = {id(run_model): (10.25, 10.0), id(ref_model): (ref_a, ref_b)}
    monkeypatch.setattr(divergence, "last_logits",
                        lambda model, ids: torch.tensor([*logits[id(model)], -5.0]))   # tokens 0, 1 and 2
    found = divergence.divergence_at(run_model, ref_model, [5], [0], [1])
    assert found["verdict"] == verdict and found["near_tie"] == (verdict == "near-tie")
    assert found["spacing"] == 0.0625 and found["tie_margin"] == pytest.approx(abs(0.25 - (ref_a - ref_b)) + 0.0625)


def test_the_gpu_check_judges_fp32_divergences_against_the_fp32_target(monkeypatch, tmp_path):
    """In fp32 every divergence from AR's output is a bug, so the GPU check lists them too, judged against the
    fp32 target itself; half precisions against that same fp32 target, or without an fp32 run against an fp32
    copy loaded once (failed before: fp32 was judged against nothing, its divergences unlisted)."""
    class Pair:
        def __init__(self, dtype):
            self.dtype, self.target = dtype, f"{dtype} target"

    asked = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda index=0: "Test GPU")
    monkeypatch.setattr(gpu_check, "load_pair", lambda device, dtype: Pair(dtype))
    copies = []
    monkeypatch.setattr(gpu_check, "load_causal_lm", lambda *a: copies.append(a) or "fp32 copy")
    monkeypatch.setattr(gpu_check, "check_dtype", lambda pair, *a, reference=None, **k: asked.append(
        (pair.dtype, reference)) or {"methods": {}, "cost": None, "divergences": []})
    monkeypatch.setattr(gpu_check, "report", lambda *a: "report")
    assert gpu_check.main(["--no-tests", "--dtypes", "fp32,bf16,fp16", "--out-dir", str(tmp_path)]) == 0
    assert asked == [("fp32", "fp32 target"), ("bf16", "fp32 target"), ("fp16", "fp32 target")] and not copies
    asked.clear()
    assert gpu_check.main(["--no-tests", "--dtypes", "bf16,fp16", "--out-dir", str(tmp_path)]) == 0
    assert asked == [("bf16", "fp32 copy"), ("fp16", "fp32 copy")] and len(copies) == 1
