"""Compare's benchmark (issue 32): every row timed warm and in a rotated order, run through the model lane
(progress, cancellation, time limit), its plan shared with the bench command, its summary and views."""

from __future__ import annotations

import shlex
import threading

import pytest
from tiny import tiny_pair

import opttree.bench.harness as harness
from opttree.bench import compare as plan
from opttree.bench.prompts import parse_prompts
from opttree.config import DecodeConfig
from opttree.serve.allow_list import ModelEntry, Registry, load_registry
from opttree.serve.service import RunError, RunService

PROMPTS = parse_prompts('{"prompt": "t1 t2 t3"}\n{"prompt": "t4 t5"}\n{"prompt": "t6 t7 t8 t9"}\n'
                        '{"prompt": "t2 t9 t4"}\n{"prompt": "t5 t5 t1 t3"}\n')
METHODS = ["ar", "opt-tree@6", "binary@6", "eagle-static@30", "opt-tree@auto"]
CFG = DecodeConfig(max_new_tokens=6, max_depth=3)


@pytest.fixture(scope="module")
def pair():
    return tiny_pair("classic", draft_is_target=True)


class StartUpClock:
    """A fake clock that only the runs move: each run costs 10 ms, and the first run of each method (and,
    far more, the first run of all) pays a one-off start-up cost, as a real first call pays for loading
    kernels and allocating caches. `scale` multiplies every cost (fake seconds: no real time passes)."""

    def __init__(self):
        self.now, self.seen, self.scale = 0.0, set(), 1.0

    def __call__(self) -> float:
        return self.now

    def charge(self, cfg: DecodeConfig) -> None:
        key = (cfg.method, cfg.nodes)
        self.now += self.scale * (0.01 + (1.0 if key not in self.seen else 0.0) + (5.0 if not self.seen else 0.0))
        self.seen.add(key)


@pytest.fixture()
def startup_clock(monkeypatch):
    clock, real = StartUpClock(), harness.run

    def charged_run(pair, prompt, cfg, **kw):
        trace = real(pair, prompt, cfg, **kw)
        clock.charge(cfg)
        return trace

    monkeypatch.setattr(harness, "clock", clock)
    monkeypatch.setattr(harness, "run", charged_run)
    return clock


def test_no_timed_row_pays_a_start_up_cost(pair, startup_clock):
    """Every method runs once before timing starts: no recorded row carries a first call's cost (without
    the warm-up, the first timed row of each method would take over a second on this clock)."""
    r = harness.run_bench(pair, PROMPTS[:2], METHODS, CFG, warmup=1, chat=False, log=lambda m: None)
    assert r["meta"]["warmup_order"] == METHODS
    walls = {(row["prompt_id"], row["method"]): row["wall_s"] for row in r["runs"]}
    assert len(walls) == 2 * len(METHODS) and max(walls.values()) < 0.5, walls
    startup_clock.seen.clear()                                  # a fresh process: nothing warm
    harness.MethodRunner(pair, CFG, chat=False)("ar", "", [1, 2])
    assert startup_clock() > 0.5                                # the clock does charge a cold start


@pytest.mark.parametrize("tool", ["bench", "sweep"])
def test_a_benchmark_without_warm_up_is_refused(pair, startup_clock, tool):
    """`--warmup 0` let the AR reference, run first, pay the process's start-up costs: a tiny pair's sweep
    read speedups of ×70–×100 against ×0.7–×0.8 warm. Both benchmarks refuse it, and with the warm-up the
    reference is a warm run (on this clock each run costs 10 ms once warm)."""
    from opttree.bench.sweep import run_sweep  # the sweep, imported where it is tested

    def bench(warmup):
        if tool == "bench":
            return harness.run_bench(pair, PROMPTS[:1], ["ar", "opt-tree@6"], CFG, warmup=warmup, chat=False,
                                     log=lambda m: None)
        return run_sweep(pair, PROMPTS[:1], CFG, ["opt-tree"], [6], warmup=warmup, chat=False, log=lambda m: None)

    with pytest.raises(harness.BadInput, match="--warmup must be at least 1, got 0"):
        bench(0)
    assert startup_clock.seen == set()                          # refused before any run
    r = bench(1)
    ar = r["methods"]["ar"] if tool == "bench" else r["ar"]
    tree = r["methods"]["opt-tree@6"] if tool == "bench" else r["nodes"]["curves"]["opt-tree"][0]
    assert ar["tokens_per_s"] == pytest.approx(CFG.max_new_tokens / 0.01)   # one warm run's 10 ms
    assert tree["speedup"] == pytest.approx(1.0)                # the same tokens in the same time


def test_the_sweep_warms_every_tree_size_before_timing_it(pair, startup_clock):
    """A tree size's first run pays for its new shapes (on a tiny random Llama with SmolLM2's vocabulary, a
    binary tree's first run at n = 150 took 12 % more CPU time than the next ones on average, after a warm-up at
    n = 10; docs/architecture.md, "Timing").
    The sweep's warm-up runs every setting it times, each budget and δ, so no timed point pays it (on this clock
    a setting's first run costs a second more)."""
    from opttree.bench.sweep import run_sweep  # the sweep, imported where it is tested

    r = run_sweep(pair, PROMPTS[:2], CFG, ["opt-tree", "binary"], [4, 6], thresholds=[0.0, 0.5], threshold_nodes=5,
                  chat=False, log=lambda m: None)
    points = [p for curve in r["nodes"]["curves"].values() for p in curve] + r["threshold"]["points"]
    assert len(points) == 6 and [p["speedup"] for p in points] == pytest.approx([1.0] * 6)


def test_export_trees_comparison_times_both_trees_warm(pair, startup_clock):
    """`export-tree --method opt-tree` times OPT-Tree against its fitted static tree on the same prompts; each
    runs once untimed first (the harness's warm-up), so neither carries a first run's cost: on this clock two
    trees that decode the same tokens time alike."""
    from opttree.bench import tree_export  # the export's comparison, imported where it is tested

    questions = [{"question_id": q.id, "turns": [q.prompt]} for q in PROMPTS[:3]]
    cfg = DecodeConfig(method="opt-tree", nodes=6, max_new_tokens=6, max_depth=3)
    r = tree_export.compare(pair, questions, cfg, [(0,), (1,), (0, 0), (0, 1), (1, 0), (0, 0, 0)])
    assert r["prompts"] == [q.id for q in PROMPTS[:3]] and r["tau_opt_tree"] > 1 and r["tau_static"] > 1
    assert r["speed_ratio_opt_tree_over_static"] == pytest.approx(1.0)
    assert {("opt-tree", 6), (tree_export.STATIC_CARRIER, 6)} <= startup_clock.seen


@pytest.mark.parametrize("tool", ["bench", "sweep"])
def test_bench_cli_refuses_no_warm_up_before_loading(tmp_path, capsys, tool):
    """The command line says so before it loads anything (the model folder named here does not exist)."""
    from opttree.cli import main  # the command line, imported where it is tested

    assert main([tool, "--warmup", "0", "--base-model-path", str(tmp_path / "none")]) == 2
    assert "--warmup must be at least 1, got 0" in capsys.readouterr().err


def test_methods_rotate_from_prompt_to_prompt(pair):
    """Each prompt runs every method once, and each method leads exactly one of len(methods) prompts (no
    row always runs first, straight after another's start-up)."""
    r = harness.run_bench(pair, PROMPTS, METHODS, CFG, warmup=1, chat=False, log=lambda m: None)
    order = r["meta"]["run_order"]
    assert [pid for pid, _ in order] == [q.id for q in PROMPTS]
    assert all(sorted(ms) == sorted(METHODS) for _, ms in order)
    assert sorted(ms[0] for _, ms in order) == sorted(METHODS)
    done = [(row["prompt_id"], row["method"]) for row in r["runs"]]
    assert done == [(pid, m) for pid, ms in order for m in ms]    # the rows ran in the order the meta says


def test_a_prompt_that_would_end_past_the_deadline_is_left_out(pair, startup_clock):
    """With every run taking ~10 ms after its first, a deadline that leaves room for the warm-up and two
    prompts ends the comparison there, whole prompts only, and says so."""
    first = harness.run_bench(pair, PROMPTS, METHODS, CFG, chat=False, log=lambda m: None, deadline_s=1e6)
    assert "stopped_early" not in first["meta"] and first["meta"]["prompts"] == len(PROMPTS)
    startup_clock.seen.clear()
    warm = 5.0 + len(METHODS) * 1.01                                  # the warm-up's start-up costs
    r = harness.run_bench(pair, PROMPTS, METHODS, CFG, chat=False, log=lambda m: None,
                          deadline_s=warm + 2.5 * len(METHODS) * 0.01)
    assert r["meta"]["prompts"] == 2 and "2 of 5 prompts run" in r["meta"]["stopped_early"]
    assert {row["prompt_id"] for row in r["runs"]} == {PROMPTS[0].id, PROMPTS[1].id}


def test_iter_bench_says_what_runs_next_and_keeps_the_asked_traces(pair):
    messages = list(harness.iter_bench(pair, PROMPTS[:2], METHODS, CFG, chat=False, log=lambda m: None,
                                       keep_traces={PROMPTS[0].id}))
    *progress, last = messages
    assert [m["phase"] for m in progress] == ["warm-up"] * len(METHODS) + ["timed"] * 2 * len(METHODS)
    assert [m["run"] for m in progress] == list(range(1, 3 * len(METHODS) + 1))
    assert all(m["runs"] == 3 * len(METHODS) for m in progress) and progress[-1]["prompt"] == 2
    result = last["result"]
    assert set(result["traces"]) == {PROMPTS[0].id} and set(result["traces"][PROMPTS[0].id]) == set(METHODS)


# ---------------------------------------------------------------- through the service's lane


@pytest.fixture()
def service(pair):
    registry = Registry([ModelEntry("tiny", "tiny pair", "t", "self")], default="tiny", fallback="tiny")
    return RunService(registry=registry, pair_factory=lambda entry: pair)


def bench_job(prompts=PROMPTS[:2], methods=METHODS):
    def job(pair, cfg, stop, pairs):
        return harness.iter_bench(pair, prompts, methods, cfg, chat=False, log=lambda m: None, cancel=stop,
                                  pairs=pairs)
    return job


def test_a_comparison_streams_progress_through_the_lane(service):
    updates = list(service.stream_job("tiny", bench_job(), dict(max_new_tokens=6, max_depth=3)))
    assert [u.state for u in updates[:-1]] == ["running"] * (3 * len(METHODS)) and updates[-1].state == "done"
    result = updates[-1].result
    assert result["meta"]["warmup_order"] == METHODS and result["meta"]["config"]["max_depth"] == 3
    assert service.lane.active == 0


def test_a_comparison_is_validated_cancelled_and_timed_like_a_run(service):
    with pytest.raises(RunError) as bad:
        list(service.stream_job("tiny", bench_job(), dict(max_depth=99)))
    assert bad.value.kind == "bad_input"
    cancel = threading.Event()
    stream = service.stream_job("tiny", bench_job(), dict(max_new_tokens=6), cancel=cancel)
    next(stream)
    cancel.set()
    with pytest.raises(RunError) as stopped:
        list(stream)
    assert stopped.value.kind == "cancelled" and service.lane.active == 0
    service.time_limit_s = 0.0
    with pytest.raises(RunError) as late:
        list(service.stream_job("tiny", bench_job(), dict(max_new_tokens=6)))
    assert late.value.kind == "timeout"


def test_the_compare_tabs_job_leaves_out_prompts_near_the_services_time_limit(service, startup_clock):
    """The tab's job stops starting prompts at DEADLINE of the service's time limit, so a comparison that
    would outrun the limit ends with the prompts it finished and a verdict that says so (without it, the
    service's timeout ends the whole job and shows nothing). Here the harness's clock charges 100 fake
    seconds for a first run: the limit leaves room for the warm-up and two and a half prompts, and the
    service's own timeout, on the real clock, is far beyond what the runs take."""
    from ui.compare import DEADLINE, compare_job
    from viz.compare_table import verdict_text

    startup_clock.scale = 100.0
    warm, run = 100.0 * (5.0 + len(METHODS) * 1.01), 100.0 * 0.01       # the warm-up's costs; one warm run
    service.time_limit_s = (warm + 2.5 * len(METHODS) * run) / DEADLINE
    updates = list(service.stream_job("tiny", compare_job(service, PROMPTS, METHODS), dict(max_new_tokens=6)))
    result = updates[-1].result
    assert updates[-1].state == "done" and result["meta"]["prompts"] == 2
    assert {row["prompt_id"] for row in result["runs"]} == {PROMPTS[0].id, PROMPTS[1].id}
    assert "the time limit was near: 2 of 5 prompts run" in verdict_text(plan.summary(result))
    assert set(result["traces"]) == {PROMPTS[0].id}                    # the first prompt's traces, for the panels


# ---------------------------------------------------------------- the plan, shared with the bench command


def test_the_default_plan_covers_several_prompts_budgets_and_the_auto_budget():
    prompts = plan.compare_prompts("Write a haiku about rain.")
    assert len(prompts) >= 5 and prompts[0].id == "prompt" and len({q.id for q in prompts}) == len(prompts)
    assert plan.compare_prompts("Write a haiku about rain.", plan.ONE) == prompts[:1]
    builtin = prompts[1].prompt
    assert len(plan.compare_prompts(builtin)) == len(prompts) - 1        # a built-in prompt is not run twice
    methods = plan.compare_methods()
    assert methods[0] == "ar" and len(methods) == 1 + 3 * (len(plan.BUDGETS) + 1)
    assert {"opt-tree@25", "eagle-static@60", "binary@auto", "opt-tree@auto"} <= set(methods)
    assert harness.parse_methods(methods) == methods
    assert plan.compare_methods(["chain"], [10], ["lookup"]) == ["ar", "opt-tree@10", "chain@10", "opt-tree@auto",
                                                                 "chain@auto", "lookup:opt-tree@auto"]


def test_a_static_shape_says_when_it_cannot_use_the_budget():
    assert plan.capacity("eagle-static@60", 10) == 25                 # EAGLE-25 drafts 25 of 60
    assert plan.capacity("eagle-static@25", 10) is None
    assert plan.capacity("binary@60", 10) is None                     # binary grows to the budget
    assert plan.capacity("chain@25", 10) == 10                        # a chain is as long as max depth
    assert plan.capacity("opt-tree@60", 10) is None and plan.capacity("binary@auto", 10) is None


def test_the_command_line_runs_the_same_comparison():
    from opttree.cli import build_parser

    methods = plan.compare_methods()
    settings = {**DecodeConfig().to_dict(), "max_new_tokens": 16, "threshold": 0.3, "nodes": 0}
    line = plan.bench_command("Why is the sky blue?", plan.ALL, methods, settings)
    args = build_parser().parse_args(shlex.split(line)[3:])
    assert args.prompt == ["Why is the sky blue?"] and args.prompts == "opttree/assets/prompts/compare.jsonl"
    assert harness.parse_methods(args.methods) == methods
    assert args.max_new_tokens == 16 and args.threshold == 0.3 and args.temperature == 0
    one = build_parser().parse_args(shlex.split(plan.bench_command("Hi", plan.ONE, methods, settings,
                                                                   drafter="classic"))[3:])
    assert one.prompts is None and one.drafter == "classic"


def test_make_bench_step_compare_runs_the_tabs_defaults(capsys):
    """`python -m opttree.bench.compare PROMPT` (what `make bench STEP=compare` runs) writes the command of
    the tab at its defaults: its methods, 16 new tokens and the page's own settings (δ = 0.3)."""
    from opttree.cli import build_parser
    from opttree.config import app_defaults

    assert plan.main(["Why is the sky blue?"]) == 0
    args = build_parser().parse_args(shlex.split(capsys.readouterr().out)[3:])
    assert args.methods.split(",") == plan.compare_methods() and args.prompt == ["Why is the sky blue?"]
    assert args.max_new_tokens == plan.TOKENS and args.threshold == app_defaults()["threshold"]
    assert plan.main([]) == 2


def test_the_summary_carries_the_spread_capacity_and_verdict(pair):
    r = harness.run_bench(pair, PROMPTS[:3], ["ar", "opt-tree@30", "eagle-static@30", "opt-tree@auto",
                                              "binary@auto"], CFG, chat=False, log=lambda m: None)
    s = plan.summary(r)
    rows = {row["method"]: row for row in s["rows"]}
    assert s["prompts"] == 3 and rows["ar"]["budget"] is None and rows["opt-tree@auto"]["budget"] == 0
    assert rows["eagle-static@30"]["capacity"] == 20            # EAGLE-25 cut to max depth 3: 4 + 8 + 8
    assert all(row["prompts"] == 3 and row["tau_se"] is not None for row in s["rows"])
    assert s["verdict"].startswith("At n = 30") and "over 3 prompts" in s["verdict"]
    # The runs' mean KV prefix, each prompt plus half its output: prompts of 100, 300 and 500 tokens whose
    # runs wrote 10, 30 and 50 give (105 + 315 + 525) / 3.
    ids = sorted({run["prompt_id"] for run in r["runs"]})
    for run in r["runs"]:
        k = ids.index(run["prompt_id"])
        run.update(prompt_tokens=100 + 200 * k, new_tokens=10 + 20 * k)
    assert len(ids) == 3 and plan.summary(r)["context_tokens"] == 315.0
    # Accepted draft tokens per step is a mean over prompts, as τ is: τ − 1 where every step has its bonus
    # (pooled over steps, a prompt of many short steps would pull it far below τ − 1).
    for run in r["runs"]:
        if run["method"] == "opt-tree@30":
            k = ids.index(run["prompt_id"])
            run.update(tau=[8.0, 1.6, 1.6][k], steps=[2, 10, 10][k], mean_accepted_draft_tokens=[7.0, 0.6, 0.6][k])
    accepted = {row["method"]: row for row in plan.summary(r)["rows"]}["opt-tree@30"]
    assert accepted["tau"] == pytest.approx(3.733, abs=1e-3)
    assert accepted["mean_accepted_draft_tokens"] == pytest.approx(accepted["tau"] - 1, abs=1e-3)


def test_compare_extras_follow_the_allow_list():
    from ui.compare import extra_rows

    reg = load_registry()
    offered, others, skipped = extra_rows(reg, "smollm2-eagle", ["lookup", "bogus", "opt-tree + retrieval",
                                                                 "recycling"])
    assert offered == ["opt-tree + retrieval", "recycling", "lookup"] and not skipped
    assert others == {"recycling": "smollm2-recycling", "lookup": "smollm2-lookup"}
    assert extra_rows(reg, "smollm2-self", ["opt-tree + retrieval"]) == ([], {}, ["opt-tree + retrieval"])
    assert extra_rows(reg, "no-such-pair", ["lookup"]) == ([], {}, ["lookup"])
    offered, others, _ = extra_rows(reg, "smollm2-lookup", ["lookup", "recycling"])   # its own row: left out
    assert offered == ["recycling"] and others == {"recycling": "smollm2-recycling"}


def test_a_comparison_with_no_static_tree_ticked_says_which_one_stands_in():
    from opttree.config import SETTING_NAMES
    from ui.common import Page
    from ui.compare import plan_for

    page = Page(settings={k: k for k in SETTING_NAMES})
    service = RunService(registry=load_registry())
    settings = [getattr(DecodeConfig(), k) for k in SETTING_NAMES]

    def plan_with(statics):
        return plan_for(page, service, "smollm2-eagle", "Hi", [*settings, statics, [], plan.ONE, ["4"], 8])

    _, methods, _, _, notes, _ = plan_with([])
    assert "binary@4" in methods and notes == ["No static tree was ticked: the binary tree stands in."]
    _, methods, _, _, notes, _ = plan_with(["sequoia"])
    assert "sequoia@4" in methods and "binary@4" not in methods and notes == []
    # /compare takes its budgets raw: ones that are no whole number are left out, as '0' and 'x' are ('²' passes
    # str.isdigit, which int() refuses: the comparison ended in a bare error).
    methods = plan_for(page, service, "smollm2-eagle", "Hi", [*settings, [], [], plan.ONE, ["²", "x", "0", "10"], 8])[1]
    assert [m for m in methods if m.startswith("opt-tree@")] == ["opt-tree@10", "opt-tree@auto"]
