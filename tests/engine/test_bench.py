"""Benchmarks, sweeps and the eval command on tiny random models (fast, no timing thresholds)."""

import copy
import hashlib
import io
import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from tiny import strict_json, tiny_pair

from opttree.bench.cli import bench_to_files, sweep_to_files
from opttree.bench.harness import BENCH_METHODS, parse_methods, pearson
from opttree.bench.prompts import parse_prompts, read_prompts
from opttree.config import DecodeConfig
from opttree.errors import BadInput
from opttree.nets.few_row_linear import kernel_of

MT = ('{"question_id": 1, "category": "math", "turns": ["t1 t2 t3", "t4"]}\n'
      '{"question_id": 2, "category": "writing", "turns": ["t5 t6 t7 t8"]}\n')
AGG_FIELDS = {"prompts", "new_tokens", "steps", "tau", "tokens_per_s", "speedup", "speedup_median", "exact_match",
              "mean_draft_ms", "mean_build_ms", "mean_verify_ms", "draft_share", "mean_nodes", "mean_depth",
              "mean_expected_accept", "mean_accepted_draft_tokens", "draft_acceptance_rate", "acceptance_by_depth",
              "drafted_by_depth", "mean_prefill_ms", "ea_a_pearson_r", "ea_a_steps"}


@pytest.fixture(autouse=True)
def one_thread():
    # Tiny models on a shared 2-core machine: one thread avoids thread-sync stalls under load.
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


@pytest.fixture(scope="module")
def pair():
    # The draft is the target itself: trees get accepted, so τ > 1 and exactness is really tested.
    return tiny_pair("classic", draft_is_target=True)


def test_prompt_reader_accepts_both_forms(tmp_path):
    f = tmp_path / "p.jsonl"
    f.write_text(MT + '\n{"prompt": "t9 t10"}\n{"prompt": "t3", "id": "x", "category": "misc"}\n')
    got = read_prompts(f)
    assert [q.prompt for q in got] == ["t1 t2 t3", "t5 t6 t7 t8", "t9 t10", "t3"]
    assert [q.category for q in got] == ["math", "writing", "all", "misc"]
    assert [q.id for q in got] == ["1", "2", "3", "x"]
    assert [q.category for q in read_prompts(f, limit=2)] == ["math", "writing"]
    assert [q.id for q in read_prompts(f, categories=["misc"])] == ["x"]


@pytest.mark.parametrize("text,needle", [
    ("", "no prompts"),
    ("not json\n", "line 1: not valid JSON"),
    ('{"prompt": "ok"}\n[1, 2]\n', "line 2: each line must be a JSON object"),
    ('{"q": "hi"}\n', "expected MT-bench form"),
    ('{"turns": []}\n', "'turns' must be a non-empty list"),
    ('{"prompt": 5}\n', "'prompt' must be a string"),
    ('{"prompt": "   "}\n', "prompt is empty"),
])
def test_prompt_reader_rejects_bad_files(tmp_path, text, needle):
    f = tmp_path / "bad.jsonl"
    f.write_text(text)
    with pytest.raises(BadInput, match="bad.jsonl") as exc:
        read_prompts(f)
    assert needle in str(exc.value)


def test_prompt_reader_missing_file_and_bad_limit(tmp_path):
    with pytest.raises(BadInput, match="not found"):
        read_prompts(tmp_path / "nope.jsonl")
    f = tmp_path / "p.jsonl"
    f.write_text(MT)
    with pytest.raises(BadInput, match="--limit"):
        read_prompts(f, limit=0)


def test_method_list_validation():
    assert parse_methods("opt-tree,chain")[0] == "ar"  # the reference is always run
    assert parse_methods(",".join(BENCH_METHODS)) == list(BENCH_METHODS)
    with pytest.raises(BadInput, match="unknown method"):
        parse_methods("opt-tree,medusa")
    assert parse_methods("opt-tree@10,opt-tree,opt-tree@auto") == ["ar", "opt-tree@10", "opt-tree", "opt-tree@auto"]
    for bad in ("opt-tree@x", "opt-tree@-1", "ar@5", "ar@auto"):
        with pytest.raises(BadInput):
            parse_methods(bad)


def test_method_names_for_training_free_drafters_and_fusion():
    from opttree.bench.harness import Spec, needs_draft_model, parse_spec

    assert parse_spec("recycling") == Spec("recycling", "tr-static", None, False)
    assert parse_spec("lookup:chain@5") == Spec("lookup", "chain", 5, False)
    assert parse_spec("opt-tree@10+retrieval") == Spec(None, "opt-tree", 10, True)
    assert parse_spec("early-exit:chain~thompson") == Spec("early-exit", "chain", None, False, "thompson")
    assert parse_spec("eagle:opt-tree+retrieval") == Spec("eagle", "opt-tree", None, True)
    for bad, needle in [("medusa:opt-tree", "drafter before"), ("opt-tree+magic", "may follow a method"),
                        ("recycling:opt-tree+retrieval", "has none"), ("recycling:ar", "ar has no tree")]:
        with pytest.raises(BadInput, match=needle):
            parse_spec(bad)
    assert not needs_draft_model(["ar", "hf-lookup", "recycling", "lookup:opt-tree"])
    assert needs_draft_model(["ar", "opt-tree+retrieval"])


def test_bench_rows_for_recycling_lookup_fusion_and_hf_lookup(tmp_path):
    """The new rows run on the same target, stay exact, and name how the recycling table was kept."""
    pair = tiny_pair("classic", draft_is_target=True)
    prompts = parse_prompts('{"prompt": "t3 t4 t5 t3 t4", "category": "qa"}\n'
                            '{"prompt": "t7 t8 t7", "category": "qa"}\n')
    methods = ["ar", "hf-lookup", "recycling", "lookup", "opt-tree+retrieval", "recycling:opt-tree"]
    for scope in ("run", "session"):
        cfg = DecodeConfig(method="ar", nodes=8, max_depth=4, max_new_tokens=10, recycling_scope=scope)
        r = bench_to_files(pair, prompts, methods, cfg, chat=False, log=lambda m: None)
        assert set(r["methods"]) == set(methods)
        for m in methods:
            assert r["methods"][m]["exact_match"] == 1.0, m
            assert r["methods"][m]["new_tokens"] == 20, m
        assert ("whole benchmark" in r["meta"]["recycling_table"]) == (scope == "session")
    assert r["meta"]["hf_lookup_config"]["prompt_lookup_num_tokens"] == 10
    # Each drafter named before ':' is recorded with its draft and the cost curve its auto budget read.
    others = r["meta"]["other_drafters"]
    assert set(others) == {"recycling", "lookup"} and others["lookup"]["draft"] == "prompt lookup"
    assert all(o["cost"]["verify_ms"] for o in others.values())
    assert r["methods"]["hf-lookup"]["steps"] <= r["methods"]["ar"]["steps"]   # target forwards, counted


def test_bench_measures_every_pairs_cost_curve_before_timing(monkeypatch):
    """Rows with a drafter of their own (Token Recycling, prompt lookup) run on another pair: its cost
    curve is measured before the first timed run too, never inside one."""
    from opttree.bench import harness
    from opttree.engine import cost

    measured, first_run = [], []
    real_measure, real_run = cost.load_or_measure, harness.run
    monkeypatch.setattr(cost, "load_or_measure", lambda pair, **kw: measured.append(pair.drafter_kind)
                        or real_measure(pair, **kw))
    monkeypatch.setattr(harness, "run", lambda *a, **kw: first_run.append(list(measured)) or real_run(*a, **kw))
    prompts = parse_prompts('{"prompt": "t3 t4 t5 t3 t4", "category": "qa"}\n')
    cfg = DecodeConfig(method="ar", nodes=0, max_depth=4, max_new_tokens=4)
    bench_to_files(tiny_pair("classic"), prompts, ["ar", "recycling", "lookup:opt-tree@auto"], cfg, chat=False,
                   log=lambda m: None)
    assert {"classic", "recycling", "lookup"} <= set(first_run[0])


def test_pearson():
    assert pearson([1, 2, 3, 4], [2, 4, 6, 8]) == 1.0
    assert pearson([1, 2], [1, 2]) is None
    assert pearson([1, 1, 1], [1, 2, 3]) is None


def test_bench_writes_documented_json(tmp_path, pair):
    prompts = parse_prompts(MT)
    cfg = DecodeConfig(method="ar", nodes=12, max_depth=4, max_new_tokens=12)
    out, png = tmp_path / "r.json", tmp_path / "r.png"
    methods = ["ar", "hf-assisted", "opt-tree", "binary", "eagle-dynamic", "opt-tree@4", "opt-tree@auto"]
    assistant = copy.deepcopy(pair.target)  # a separate module: the forward hook counts target calls only
    bench_to_files(pair, prompts, methods, cfg, assistant=assistant, out=out, plot=png, chat=False,
                   log=lambda m: None)
    r = strict_json(out.read_text())
    assert png.stat().st_size > 1000
    assert set(r) == {"meta", "methods", "by_category", "runs", "ea_a"}
    assert set(r["methods"]) == set(methods)
    for m, agg in r["methods"].items():
        assert AGG_FIELDS <= set(agg), m
        assert agg["prompts"] == 2 and agg["new_tokens"] == 24
    assert r["methods"]["opt-tree@4"]["mean_nodes"] <= 4 < r["methods"]["opt-tree"]["mean_nodes"]
    # Each run's prefill is timed within its wall time; transformers' assisted generation does its own.
    assert all(0 < x["prefill_ms"] < 1000 * x["wall_s"] for x in r["runs"] if x["method"] != "hf-assisted")
    ar_prefills = [x["prefill_ms"] for x in r["runs"] if x["method"] == "ar"]
    assert r["methods"]["ar"]["mean_prefill_ms"] == pytest.approx(sum(ar_prefills) / 2, abs=0.01)
    assert r["methods"]["hf-assisted"]["mean_prefill_ms"] is None
    for m in ("opt-tree", "binary", "eagle-dynamic", "hf-assisted", "opt-tree@4", "opt-tree@auto"):
        assert r["methods"][m]["exact_match"] == 1.0, m  # greedy fp32: identical to ar
    assert 0 < r["methods"]["opt-tree@auto"]["draft_share"] < 1
    assert r["meta"]["cost"]["tokens"][0] == 1          # the curve the auto budget used
    assert r["methods"]["ar"]["tau"] == 1.0 and r["methods"]["ar"]["speedup"] == 1.0
    assert r["methods"]["opt-tree"]["tau"] > 1.5  # draft == target: long acceptances
    assert r["methods"]["hf-assisted"]["tau"] > 1.5  # forwards counted by hook, not assumed
    assert set(r["by_category"]) == {"math", "writing"}
    assert len(r["runs"]) == 2 * len(methods)
    assert {"machine", "config", "hf_assisted_config"} <= set(r["meta"])
    m = r["meta"]["machine"]
    assert {"cpu", "cpu_isa", "torch_threads", "torch", "transformers", "date_utc", "noise"} <= set(m)
    assert r["meta"]["hf_assisted_config"]["num_assistant_tokens"] == 20
    assert r["meta"]["assistant_kernel"] == kernel_of(assistant)
    assert r["meta"]["assistant_kernel"] in ("few-row", "default")      # an fp32 assistant here
    assert assistant.generation_config.num_assistant_tokens == 20  # set where 5.x reads it
    assert len(r["ea_a"]["opt-tree"]) == r["methods"]["opt-tree"]["steps"]
    from opttree.bench.report import write_report
    from opttree.engine.cost import load_or_measure

    text = write_report(r, None, tmp_path / "README.md", label="tiny", command="make bench",
                        cost=load_or_measure(pair))
    assert "| opt-tree | " in text and "exact match with AR = 100 %" in text and "make bench" in text
    assert "| opt-tree@auto | " in text and "OPT-Tree auto ≥ 1.8× over AR" in text
    assert "draft + build ≤ 30 % of step time (`opt-tree@auto`)" in text
    assert "What a forward costs here" in text and "| tokens per verify forward | 1 | 2 |" in text
    curve = load_or_measure(pair)
    assert f"({curve['key']['isa']}, float32," in text
    assert curve["load_avg"] is None or f"(load average {curve['load_avg'][0]})" in text
    assert "assistant ran on int8" not in text
    r["meta"]["assistant_kernel"] = "int8"
    assert "defaults for an assistant; the assistant ran on int8 weights." in write_report(
        r, None, tmp_path / "README.md", label="tiny", command="make bench", cost=curve)


def test_report_checks_the_tau_ordering_of_a_second_bench():
    from opttree.bench.report import targets_section

    def bench(taus, nodes=60):
        return {"methods": {m: {"tau": t} for m, t in zip(("opt-tree", "eagle-static", "binary"), taus)},
                "meta": {"config": {"nodes": nodes}}, "runs": [{"prompt_id": i} for i in (1, 2, 2)]}

    rows = targets_section(None, None, [bench((2.6, 2.14, 2.01)), bench((2.0, 2.1, 1.9), 30)])
    assert "| τ: OPT-Tree > EAGLE-25 > binary at n=60 (bench, 2 prompts) | 2.60 / 2.14 / 2.01 | yes |" in rows
    assert "| τ: OPT-Tree > EAGLE-25 > binary at n=30 (bench, 2 prompts) | 2.00 / 2.10 / 1.90 | no |" in rows


def test_sweep_writes_curves(tmp_path, pair):
    prompts = parse_prompts(MT)[:1]
    cfg = DecodeConfig(method="ar", nodes=8, max_depth=4, max_new_tokens=8)
    out, plots = tmp_path / "s.json", tmp_path / "plots"
    r = sweep_to_files(pair, prompts, cfg, ["opt-tree", "eagle-static"], [4, 30], thresholds=[0.5, 2.0],
                       threshold_nodes=4, cost_sizes=[1, 4, 16], cost_reps=1, out=out, plot_dir=plots,
                       warmup=1, chat=False, log=lambda m: None)
    saved = strict_json(out.read_text())
    assert saved["nodes"]["curves"].keys() == {"opt-tree", "eagle-static"}
    for pts in saved["nodes"]["curves"].values():
        assert [p["nodes"] for p in pts] == [4, 30]
        assert all(p["tau"] >= 1.0 and p["exact_match"] == 1.0 for p in pts)
        assert all("predicted_speedup" in p for p in pts)
    assert [p["threshold"] for p in saved["threshold"]["points"]] == [0.5, 2.0]
    assert [p["tokens"] for p in saved["verify_cost"]["points"]] == [1, 4, 16]
    assert saved["best_budget"]["nodes"] in (4, 30)
    assert saved["ea_a_pooled"]["steps"] > 0
    assert r["ea_a_summary"]["steps"] == saved["ea_a_summary"]["steps"]
    from opttree.bench.report import write_report

    text = write_report(None, saved, tmp_path / "README.md")
    assert "Verify cost on this device" in text and "Best OPT-Tree budget" in text and "per-step r" in text
    assert "binned r" in text and saved["ea_a_pooled"]["by_method"]["opt-tree"]["bins"]
    assert "binned E(A)–A r ≥ 0.95" in text
    for name in ("sweep_tau_vs_nodes.png", "sweep_speedup_vs_nodes.png", "sweep_threshold.png",
                 "ea_vs_a.png", "verify_cost.png"):
        assert (plots / name).stat().st_size > 1000, name


def test_eval_writes_one_answer_per_question(tmp_path, pair):
    from opttree.bench.answers import build_parser, file_source, read_questions, run_eval

    qf = tmp_path / "question.jsonl"
    qf.write_text(MT + '{"prompt": "t2 t2"}\n')
    questions = read_questions(qf)
    assert [len(q["turns"]) for q in questions] == [2, 1, 1]
    cfg = DecodeConfig(method="opt-tree", nodes=6, max_depth=3, max_new_tokens=6)
    ans = tmp_path / "out" / "answers.jsonl"
    assert run_eval(pair, questions, cfg, ans, "tiny", source=file_source(qf)) == 3
    lines = [strict_json(x) for x in ans.read_text().splitlines()]
    # each answer names the file it answers, by its bytes' sha256 (Spec-Bench's own is pinned)
    assert lines[0]["config"]["question_file"]["sha256"] == hashlib.sha256(qf.read_bytes()).hexdigest()
    assert [x["question_id"] for x in lines] == [1, 2, 3]
    assert len(lines[0]["choices"][0]["turns"]) == 2 and all(x["model_id"] == "tiny" for x in lines)
    # The reference repo's flags parse.
    args = build_parser().parse_args(["--base-model-path", "b", "--draft-model-path", "d", "--ea-model-path", "e",
                                      "--bench-name", "mt_bench", "--answer-file", "a.jsonl", "--temperature", "0",
                                      "--nodes", "50", "--threshold", "0.7", "--max_depth", "10"])
    assert (args.nodes, args.threshold, args.max_depth, args.max_new_tokens) == (50, 0.7, 10, 128)


def spec_bench_speed(answer_file, base_file, count_tokens):
    """Spec-Bench's `evaluation/speed.py`, as its code reads our files: per answer it sums
    `choices[0].new_tokens` and `.wall_time`, extends one list with `.accept_lengths` and takes its
    mean; the baseline's tokens are counted from its answer texts (tokenizer length minus one)."""
    speeds, accept = [], []
    for line in Path(answer_file).read_text().splitlines():
        c = json.loads(line)["choices"][0]
        speeds.append(sum(c["new_tokens"]) / sum(c["wall_time"]))
        accept.extend(c["accept_lengths"])
    base = []
    for line in Path(base_file).read_text().splitlines():
        c = json.loads(line)["choices"][0]
        base.append(sum(count_tokens(t) - 1 for t in c["turns"]) / sum(c["wall_time"]))
    return float(np.mean(accept)), float(np.mean(speeds) / np.mean(base))


def test_eval_answer_files_are_readable_by_spec_bench(tmp_path, pair):
    from opttree.bench.answers import read_questions, run_eval

    qf = tmp_path / "question.jsonl"
    qf.write_text(MT + '{"question": "t3 t3"}\n{"prompt": "t2 t2"}\n')
    questions = read_questions(qf)
    assert [q["turns"] for q in questions][2:] == [["t3 t3"], ["t2 t2"]]
    files = {}
    for method in ("ar", "opt-tree"):
        cfg = DecodeConfig(method=method, nodes=6, max_depth=3, max_new_tokens=8)
        files[method] = tmp_path / f"{method}.jsonl"
        run_eval(pair, questions, cfg, files[method], method)
    tau, speedup = spec_bench_speed(files["opt-tree"], files["ar"], lambda text: len(text.split()) + 1)
    assert speedup > 0
    steps = new = 0
    for line in files["opt-tree"].read_text().splitlines():
        c = json.loads(line)["choices"][0]
        # One flat list over turns: tokens committed per step (bonus included), one entry per forward.
        assert len(c["accept_lengths"]) == sum(c["idxs"]) and sum(c["accept_lengths"]) == sum(c["new_tokens"])
        assert all(isinstance(x, int) and x >= 1 for x in c["accept_lengths"])
        assert [len(a) for a in c["accepted_draft_tokens"]] == c["idxs"]
        steps, new = steps + sum(c["idxs"]), new + sum(c["new_tokens"])
    assert tau == pytest.approx(new / steps) and tau > 1.0      # the draft is the target: long accepts
    ar = [json.loads(line)["choices"][0] for line in files["ar"].read_text().splitlines()]
    assert all(set(c["accept_lengths"]) == {1} for c in ar)


def test_eval_cli_bad_question_file(tmp_path, capsys):
    from opttree.cli import main  # `opttree eval` runs the answers module's main through errors.guarded

    qf = tmp_path / "q.jsonl"
    qf.write_text("{oops\n")
    assert main(["eval", "--question-file", str(qf)]) == 2
    assert "line 1: not valid JSON" in capsys.readouterr().err


def test_bench_cli_rejects_bad_prompts_before_loading(tmp_path, capsys):
    from opttree.cli import main

    qf = tmp_path / "q.jsonl"
    qf.write_text('{"nope": 1}\n')
    assert main(["bench", "--prompts", str(qf), "--methods", "ar,opt-tree"]) == 2
    assert "expected MT-bench form" in capsys.readouterr().err
    assert main(["sweep", "--prompts", str(qf), "--budgets", "10,x"]) == 2
    assert "--budgets" in capsys.readouterr().err


def test_time_budget_stops_after_a_whole_prompt(pair):
    from opttree.bench.harness import run_bench

    prompts = parse_prompts(MT)
    cfg = DecodeConfig(method="ar", nodes=4, max_depth=2, max_new_tokens=4)
    r = run_bench(pair, prompts, ["ar", "opt-tree"], cfg, warmup=1, chat=False, log=lambda m: None,
                  max_minutes=1e-9)
    assert r["meta"]["prompts"] == 1 and "time budget" in r["meta"]["stopped_early"]
    assert {(x["prompt_id"], x["method"]) for x in r["runs"]} == {("1", "ar"), ("1", "opt-tree")}


def test_sweep_caps_and_reused_cost_curve(pair):
    from opttree.bench.sweep import run_sweep

    cost = {"meta": {}, "points": [{"tokens": 1, "median_ms": 10.0}, {"tokens": 8, "median_ms": 20.0}]}
    cfg = DecodeConfig(method="ar", nodes=4, max_depth=2, max_new_tokens=4)
    r = run_sweep(pair, parse_prompts(MT)[:1], cfg, ["binary", "opt-tree"], [2, 4], warmup=1, chat=False,
                  verify_cost=cost, log=lambda m: None, caps={"binary": 2})
    assert [p["nodes"] for p in r["nodes"]["curves"]["binary"]] == [2]
    assert [p["nodes"] for p in r["nodes"]["curves"]["opt-tree"]] == [2, 4]
    assert r["meta"]["caps"] == {"binary": 2} and r["nodes"]["curves"]["opt-tree"][0]["predicted_speedup"] > 0


def test_acceptance_over_runs_equals_acceptance_of_all_their_steps():
    """Per-run rates combine through their counts: the same figures as one run holding every step."""
    from opttree.bench.harness import combined_acceptance
    from opttree.trace import acceptance

    def step(depths, accepted):
        return {"tokens": [0] * len(depths), "depth": depths, "accept_length": accepted}

    runs = [[step([1, 2, 3], 3), step([1, 1], 1)], [step([1, 2], 0)], [step([1, 2, 2, 3, 4], 2)] * 3]
    rows = [{**acceptance(r), "steps": len(r), "mean_nodes": sum(len(s["tokens"]) for s in r) / len(r)}
            for r in runs]
    whole = acceptance([s for r in runs for s in r])
    got = combined_acceptance(rows)
    assert got["drafted_by_depth"] == whole["drafted_by_depth"]
    assert got["acceptance_by_depth"] == whole["acceptance_by_depth"]
    assert got["draft_acceptance_rate"] == whole["draft_acceptance_rate"]
    assert combined_acceptance([{"steps": 3, "mean_nodes": None}])["acceptance_by_depth"] is None   # hf rows


class _Terminal(io.StringIO):
    def isatty(self):
        return True


@pytest.mark.parametrize("tool", ["bench", "sweep"])
@pytest.mark.parametrize("terminal", [True, False])
def test_bench_and_sweep_show_progress_only_on_a_terminal(pair, monkeypatch, tool, terminal):
    from opttree.bench.harness import run_bench
    from opttree.bench.sweep import run_sweep

    err = _Terminal() if terminal else io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    cfg = DecodeConfig(method="ar", nodes=4, max_depth=2, max_new_tokens=3)
    if tool == "bench":
        run_bench(pair, parse_prompts(MT), ["ar", "opt-tree"], cfg, warmup=1, chat=False, log=lambda m: None)
    else:
        run_sweep(pair, parse_prompts(MT), cfg, ["opt-tree"], [2, 4], warmup=1, chat=False, log=lambda m: None)
    text = err.getvalue()
    if not terminal:
        assert text == ""
        return
    # tqdm's last line: "runs: 100%|…| 4/4 [00:01<00:00, 3.1run/s]" (elapsed<remaining, the ETA).
    last = text.replace("\r", "\n").strip().splitlines()[-1]
    done, total = map(int, re.search(r"(\d+)/(\d+)", last).groups())
    assert last.startswith("runs: 100%") and "<" in last and done == total
    if tool == "bench":
        assert total == 4                                   # 2 prompts × 2 methods


def test_gpu_check_refuses_without_cuda_and_reports_what_it_measured(pair, monkeypatch, capsys):
    """`make gpu-check` stops with a message on a machine without CUDA; its measuring and report
    code runs here on a tiny pair (the CPU standing in for the device)."""
    from opttree.bench import gpu_check

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert gpu_check.main(["--no-tests"]) == 2
    assert "needs a CUDA device" in capsys.readouterr().err
    cfg = DecodeConfig(method="ar", nodes=0, max_new_tokens=6)
    results = {"fp32": gpu_check.check_dtype(pair, parse_prompts(MT), cfg)}
    methods = results["fp32"]["methods"]
    assert set(methods) == set(gpu_check.METHODS)
    assert all(m["exact_match"] == 1.0 for m in methods.values())          # fp32: lossless
    assert all(m["prompts"] == 2 and m["mean_verify_ms"] > 0 for m in methods.values())
    assert methods["opt-tree@60"]["mean_draft_ms"] > 0 and methods["ar"]["mean_draft_ms"] == 0
    text = gpu_check.report("Tiny CPU", "2026-01-01", "3 passed", results, cfg, 2)
    assert text.startswith("# GPU check: Tiny CPU") and "| fp32 | opt-tree@auto | 2 |" in text and "3 passed" in text
    assert "- fp32, verify: 1 → " in text and "- fp32, draft layer: 1 → " in text   # where a step's time goes
    # each dtype's time budget: past it, the bench stops after the prompt that crossed it
    capped = gpu_check.check_dtype(pair, parse_prompts(MT), cfg, max_minutes=1e-6)
    assert all(m["prompts"] == 1 for m in capped["methods"].values())
    assert gpu_check.DTYPES[0] == "fp32"                                   # the exactness reference first
    for bad in (["--dtypes", " , "], ["--dtypes", "fp8"], ["--minutes-per-dtype", "-1"]):
        with pytest.raises(BadInput, match="dtype|minutes"):
            gpu_check.main(bad + ["--no-tests"])                           # refused before any device work


def test_a_method_can_name_its_length_control(pair, monkeypatch):
    from opttree.bench.harness import MethodRunner, parse_spec
    from opttree.trees import length_control

    seen = []
    real = length_control.controller_for
    monkeypatch.setattr(length_control, "controller_for", lambda cfg, p=None: seen.append(cfg.length_control)
                        or real(cfg, p))

    assert parse_spec("opt-tree@25~thompson").length_control == "thompson"
    assert parse_spec("opt-tree~predictor+retrieval").length_control == "predictor"
    assert parse_spec("opt-tree").length_control is None
    for bad in ("opt-tree~magic", "ar~thompson"):
        with pytest.raises(BadInput, match="length control|ar drafts nothing"):
            parse_methods(bad)
    runner = MethodRunner(pair, DecodeConfig(method="ar", nodes=6, max_depth=3, max_new_tokens=8), chat=False)
    row, steps = runner("opt-tree~thompson", "", [5, 6, 7])
    plain, _ = runner("opt-tree", "", [5, 6, 7])
    assert row["output_ids"] == plain["output_ids"] and steps
    assert seen == ["thompson", "delta"]                # each run got its own length control


def test_the_early_exit_sweep_table_reads_cards_and_runs_and_names_the_fastest(tmp_path):
    from opttree.bench import exit_sweep

    cost = {"tokens": [1, 8], "verify_ms": [30.0, 40.0], "widths": [1, 4], "layer_ms": [3.5, 4.0], "threads": 1}
    for n, speedup in ((2, 1.10), (4, 1.04)):
        card = {"heldout_top1_by_depth": [0.34], "heldout_chain_agreement_by_depth": [0.34, 0.12, 0.06, 0.03, 0.02]}
        row = {"tau": 1.45, "speedup": speedup, "tokens_per_s": 36.0}
        bench = {"meta": {"machine": {"cpu": "Test CPU"}, "cost": {**cost, "layer_ms": [n * 1.5, n * 2.0]},
                          "dtype": "float32", "prompts": 8, "config": {"max_new_tokens": 128}},
                 "methods": {"ar": {"tau": 1.0, "speedup": 1.0, "tokens_per_s": 33.0}, exit_sweep.PRIMARY: row}}
        (tmp_path / f"card-{n}.json").write_text(json.dumps(card))
        (tmp_path / f"exit-{n}.json").write_text(json.dumps(bench))
    (tmp_path / "exit-6.json").write_text("{}")          # a run without its card is left out
    text = exit_sweep.main([str(tmp_path), "--out", str(tmp_path / "sweep.md")])
    assert "| 2 | 34 % | 34 % / 12 % / 6 % | 3.00 / 4.00 | 30.0 / 40.0 | 33.00 | 1.45 / 1.10× |" in text
    assert "| 4 |" in text and "| 6 |" not in text and "N = 2." in text
    assert (tmp_path / "sweep.md").read_text() == text


def test_plain_methods_follow_the_runs_retrieval_setting_and_plus_retrieval_always_fuses():
    """`--retrieval auto` benches the app's default (fusion wherever a draft model drafts); the default `off`
    keeps plain methods unfused; `+retrieval` fuses every prompt; lookup has nothing to fuse. Each row
    records whether its run fused."""
    from opttree.bench.harness import MethodRunner

    pair = tiny_pair("classic", eos=9)
    short, long = [5, 6, 7, 5, 6], [10 + i % 40 for i in range(130)]
    fused = {}
    for setting in ("off", "auto", "on"):
        runner = MethodRunner(pair, DecodeConfig(method="ar", nodes=8, max_depth=3, max_new_tokens=6,
                                                 retrieval=setting), chat=False)
        for method in ("opt-tree", "opt-tree+retrieval", "lookup"):
            for name, ids in (("short", short), ("long", long)):
                row, _ = runner(method, "", ids)
                fused[setting, method, name] = row["retrieval"]   # each row says what its run did
                assert row["retrieval"] == runner.last_trace["meta"]["retrieval"]
    assert fused["auto", "opt-tree", "long"] == fused["auto", "opt-tree", "short"] == "on"
    assert fused["off", "opt-tree", "long"] == "off"
    assert {fused[s, "opt-tree+retrieval", n] for s in ("off", "auto") for n in ("short", "long")} == {"on"}
    assert fused["on", "opt-tree", "short"] == "on"
    assert {fused[s, "lookup", n] for s in ("off", "auto", "on") for n in ("short", "long")} == {"off"}
