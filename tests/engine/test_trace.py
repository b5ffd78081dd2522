"""Traces validate, and hostile or malformed traces are rejected with a clear message."""

import copy
import json
import random

import pytest
from tiny import strict_json, tiny_pair

from opttree.config import DecodeConfig
from opttree.engine.speculative import run, stream_run
from opttree.errors import BadInput
from opttree.trace import summarize
from opttree.trace_file import dumps, loads, validate_trace

STEP_FIELDS = {"tokens", "texts", "parents", "depth", "q", "p_hat", "accepted", "bonus_token",
               "expected_accept", "ea_by_depth", "draft_ms", "build_ms", "verify_ms", "rank",
               "accept_length", "committed", "stop_reason", "rejected"}
META_FIELDS = {"target", "draft", "drafter", "method", "nodes", "threshold", "max_depth", "temperature",
               "device", "dtype", "seed"}
SUMMARY_FIELDS = {"new_tokens", "steps", "tau", "wall_s", "tokens_per_s"}


@pytest.fixture(scope="module")
def trace():
    pair = tiny_pair("eagle")
    return run(pair, "", DecodeConfig(method="opt-tree", nodes=15, threshold=0.01, max_new_tokens=25),
               prompt_ids=[5, 6, 7])


def test_trace_fields_and_invariants(trace):
    assert META_FIELDS <= set(trace["meta"]) and SUMMARY_FIELDS <= set(trace["summary"])
    strict_json(dumps(trace))  # standard JSON
    validate_trace(trace)
    assert sum(len(s["committed"]) for s in trace["steps"]) == len(trace["output_ids"])
    assert trace["summary"]["tau"] == pytest.approx(len(trace["output_ids"]) / len(trace["steps"]), abs=1e-3)
    for s in trace["steps"]:
        assert STEP_FIELDS <= set(s)
        for i, p in enumerate(s["parents"]):
            want = s["q"][i] * (1.0 if p == -1 else s["p_hat"][p])
            assert s["p_hat"][i] == pytest.approx(want, rel=1e-4, abs=1e-7)
        prev = -1
        for a in s["accepted"]:
            assert s["parents"][a] == prev
            prev = a
        assert s["committed"][: len(s["accepted"])] == [s["tokens"][a] for a in s["accepted"]]
        assert s["expected_accept"] == pytest.approx(sum(s["p_hat"]), abs=1e-4)


def test_every_node_names_its_source_and_old_traces_still_load(trace):
    assert all(s["source"] == ["draft"] * len(s["tokens"]) for s in trace["steps"])   # a draft model's tree
    old = copy.deepcopy(trace)
    for s in old["steps"]:
        del s["source"]            # written before sources existed
    assert loads(dumps(old))["steps"][0]["tokens"] == trace["steps"][0]["tokens"]


def test_roundtrip(trace):
    assert loads(dumps(trace)) == json.loads(dumps(trace))


@pytest.mark.parametrize("method, temperature", [("opt-tree", 0.0), ("opt-tree", 0.8), ("ar", 0.0)])
def test_every_trace_a_run_streams_loads_back_unchanged(method, temperature):
    """A run stopped after any step (Stop, the time limit, a closed tab) keeps the trace it last streamed, and
    the page exports that: each one, sampled or greedy, drafted or AR, passes the import's checks (its speed,
    its steps' and prefill's times within its wall_s) and reads back as written."""
    cfg = DecodeConfig(method=method, nodes=15, threshold=0.01, max_new_tokens=12, temperature=temperature, seed=1)
    streamed = [json.loads(dumps(t)) for t in stream_run(tiny_pair("eagle"), "", cfg, prompt_ids=[5, 6, 7])]
    assert len(streamed) > 1 and streamed[0]["summary"]["prefill_ms"] is not None
    for written in streamed:
        assert loads(dumps(written)) == written


def test_a_step_that_fails_while_recorded_leaves_the_streamed_trace_whole(monkeypatch):
    """A run that fails after a step was decoded but while it is recorded (its text decoded, its record built)
    hands back the trace it last streamed (serve/service.py RunError carries it), and the page exports that: its
    output, steps and summary agree (failed before: the step's tokens were already in output_ids, the step and
    summary not)."""
    pair = tiny_pair("eagle")
    broken, decode = [False], pair.tokenizer.decode

    def failing(*args, **kwargs):
        if broken[0]:
            raise RuntimeError("tokenizer failed")
        return decode(*args, **kwargs)

    monkeypatch.setattr(pair.tokenizer, "decode", failing)
    cfg = DecodeConfig(method="opt-tree", nodes=15, threshold=0.01, max_new_tokens=24)
    streamed = []
    with pytest.raises(RuntimeError, match="tokenizer failed"):
        for trace in stream_run(pair, "", cfg, prompt_ids=[5, 6, 7]):
            streamed.append(trace)
            broken[0] = len(streamed) == 2           # the third step fails while it is recorded
    last = streamed[-1]                               # the trace RunError carries
    committed = [t for step in last["steps"] for t in step["committed"]]
    assert last["output_ids"] == committed and last["summary"]["new_tokens"] == len(committed)
    assert last["summary"]["steps"] == len(last["steps"]) and loads(dumps(last)) == json.loads(dumps(last))


PHASES = ("draft_ms", "build_ms", "verify_ms")


def timed(trace, summary: dict, step_ms=(10.0, 5.0, 25.0)) -> dict:
    """A copy of `trace` whose steps each took `step_ms` to draft, build and verify, its summary updated."""
    out = copy.deepcopy(trace)
    for step in out["steps"]:
        step.update(zip(PHASES, step_ms))
    out["summary"].update(summary)
    return out


def filled(steps, wall_s: float, rng) -> tuple[list[dict], float]:
    """Copies of `steps` whose draft, build and verify times and a prefill (returned) share all of `wall_s`,
    each step's times rounded as a run's trace rounds them: the fullest wall time a run's file can state."""
    shares = [rng.random() for _ in range(3 * len(steps) + 1)]
    ms = [wall_s * 1e3 * x / sum(shares) for x in shares]
    return ([{**s, **{k: round(ms[3 * i + j], 3) for j, k in enumerate(PHASES)}} for i, s in enumerate(steps)],
            ms[-1])


def test_an_imported_speed_is_the_one_the_files_own_figures_give(trace):
    """A file whose tokens_per_s is not its new tokens over its wall_s shows the speed those give (failed
    before: the file's 999 tokens/s was shown beside its 2-second wall time for a 25-token run). A summary
    `summarize` wrote keeps its own speed to the last digit at any wall time, tiny ones included, where the
    wall time's rounding to 4 decimals moves new tokens / wall_s well past the speed's 3, and with its
    prefill and steps filling that wall time to the last rounding."""
    from viz.metrics import run_summary

    new_tokens = len(trace["output_ids"])
    forged = loads(dumps(timed(trace, {"wall_s": 2.0, "tokens_per_s": 999.0})))
    assert forged["summary"]["wall_s"] == 2.0 and forged["summary"]["tokens_per_s"] == round(new_tokens / 2.0, 3)
    assert f"{new_tokens / 2.0:.1f} tokens/s" in run_summary(forged) and "999.0 tokens/s" not in run_summary(forged)
    rng = random.Random(0)
    walls = [0.0, 1e-5, 4.9e-5, 5e-5, 1.5e-4, 0.01234567, 3.2] + [10 ** rng.uniform(-5, 2) for _ in range(300)]
    for wall in walls:
        steps, prefill = filled(trace["steps"], wall, rng)
        written = summarize(steps, new_tokens, wall, prefill)
        assert loads(dumps({**trace, "steps": steps, "summary": written}))["summary"] == written, wall


def test_an_imported_prefill_fits_beside_its_steps_in_the_wall_time(trace):
    """A run's wall_s times its prefill and every step. A file whose prefill_ms does not fit in its wall_s
    beside its steps' draft, build and verify times (or is negative) shows no prefill, as a run that did not
    time it, the way a speed its figures contradict reads as theirs (failed before: a 2-second run said
    '(the whole run, the prompt's 5000 ms prefill included)'); one that just fits is kept."""
    from viz.metrics import run_summary

    room = 2000.0 - 40.0 * len(trace["steps"])        # ms of the 2 s left beside 10 + 5 + 25 ms a step
    for prefill in (5000.0, room + 1.0, -3.0):
        loaded = loads(dumps(timed(trace, {"wall_s": 2.0, "prefill_ms": prefill})))
        assert loaded["summary"]["prefill_ms"] is None and loaded["summary"]["wall_s"] == 2.0, prefill
        assert "prefill" not in run_summary(loaded)
    fits = loads(dumps(timed(trace, {"wall_s": 2.0, "prefill_ms": room})))
    assert fits["summary"]["prefill_ms"] == room and f"{room:.0f} ms prefill included" in run_summary(fits)


def test_an_imported_wall_time_shorter_than_its_steps_is_refused(trace):
    """Steps' draft, build and verify times add up within the run's wall_s (failed before: a file whose 0.1 s
    run held 40 ms steps loaded, its tokens/s computed over less time than its steps took). No step time is
    negative, and steps without their own times are counted at the summary's means."""
    steps_ms = 40.0 * len(trace["steps"])
    with pytest.raises(BadInput, match=rf"add up to {steps_ms:.0f} ms, more than summary.wall_s \(0.1 s\)"):
        loads(dumps(timed(trace, {"wall_s": 0.1})))
    old = timed(trace, {"wall_s": 0.1, "mean_verify_ms": 25.0})
    for step in old["steps"]:
        del step["verify_ms"]          # older traces did not time each step
    old["steps"][0]["draft_ms"] = old["steps"][0]["build_ms"] = 0.0
    with pytest.raises(BadInput, match="summary.wall_s"):
        loads(dumps(old))
    assert loads(dumps({**old, "summary": {**old["summary"], "wall_s": 2.0}}))["summary"]["mean_verify_ms"] == 25.0
    negative = timed(trace, {"wall_s": 2.0}, (10.0, 5.0, -25.0))
    with pytest.raises(BadInput, match="step 0: verify_ms must be a number ≥ 0"):
        loads(dumps(negative))


def test_an_imported_summary_without_a_wall_time_gets_the_one_its_speed_gives(trace):
    """A summary without wall_s reads the wall time its new tokens over its tokens_per_s give, so the two
    agree and the prefill and steps are checked against it (failed before: wall_s read 0.0 beside the
    file's 12.5 tokens/s). Without a speed either, the run reads as untimed: 0 s, 0 tokens/s."""
    from viz.metrics import run_summary

    new_tokens = len(trace["output_ids"])
    bare = timed(trace, {"tokens_per_s": 12.5, "prefill_ms": 7.0})
    del bare["summary"]["wall_s"]
    loaded = loads(dumps(bare))["summary"]
    assert loaded["wall_s"] == round(new_tokens / 12.5, 4) and loaded["tokens_per_s"] == 12.5
    assert loaded["prefill_ms"] == 7.0 and loads(dumps({**bare, "summary": loaded}))["summary"] == loaded
    shown = run_summary({**bare, "summary": loaded})
    assert "12.5 tokens/s (the whole run, the prompt's 7 ms prefill included)" in shown
    for speed in (0.0, 1e-320):         # none, or one whose wall time overflows
        untimed = timed(trace, {"tokens_per_s": speed, "prefill_ms": None}, (0.0, 0.0, 0.0))
        del untimed["summary"]["wall_s"]
        summary = strict_json(dumps(loads(dumps(untimed))))["summary"]
        assert [summary[k] for k in ("wall_s", "tokens_per_s")] == [0.0, 0.0], speed
        shown = run_summary({**untimed, "summary": summary})     # no "0.0 tokens/s" for a run that took time
        assert "speed not timed" in shown and "tokens/s" not in shown.split("tokens/step")[1].split("mean E(A)")[0]
    # Steps timed in a file that timed no whole run: nothing to check them against (failed before: refused,
    # quoting a summary.wall_s of 0 s that the file does not have).
    steps_only = timed(trace, {"tokens_per_s": 0.0, "prefill_ms": 9.0}, (10.0, 5.0, 25.0))
    del steps_only["summary"]["wall_s"]
    summary = loads(dumps(steps_only))["summary"]
    assert (summary["wall_s"], summary["mean_verify_ms"]) == (0.0, 25.0)
    assert "speed not timed" in run_summary({**steps_only, "summary": summary})


def test_an_imported_run_without_new_tokens_has_no_speed(trace):
    """No tokens in no time is 0 tokens/s, whatever the file says (failed before: a file whose wall_s rounds
    to 0 kept any speed it stated for its 0 new tokens, as if any tokens could come in that time)."""
    for wall in (0.0, 4e-5, 2.0):
        empty = loads(dumps({**timed(trace, {"wall_s": wall, "tokens_per_s": 25.0}, (0.0, 0.0, 0.0)),
                             "output_ids": []}))
        assert empty["summary"]["tokens_per_s"] == 0.0 and empty["summary"]["wall_s"] == wall


def broken(trace, mutate):
    bad = copy.deepcopy(trace)
    mutate(bad)
    return dumps(bad)


@pytest.mark.parametrize("mutate,needle", [
    (lambda t: t["steps"][0]["parents"].__setitem__(0, 0), "parents must precede"),
    (lambda t: t["steps"][0].__setitem__("tokens", "abc"), "tokens"),
    (lambda t: t["steps"][0]["q"].__setitem__(0, 7.5), "q must be"),
    (lambda t: t["steps"][0]["p_hat"].__setitem__(0, 0.123456), "p_hat"),
    (lambda t: t.__setitem__("steps", [{}]), "lacks"),
    (lambda t: t.pop("meta"), "missing field"),
    (lambda t: t["steps"][0].__setitem__("accepted", [10**9]), "accepted"),
    (lambda t: t["steps"][0].__setitem__("tokens", list(range(10**5))), "at most"),
    (lambda t: t["steps"][0]["source"].__setitem__(0, "oracle"), "source must list"),
    (lambda t: t["steps"][0]["source"].pop(), "source must list"),
    (lambda t: t.__setitem__("version", 999), "not one this reader knows .1 to 1.: a newer release"),
    (lambda t: t.__setitem__("version", "1"), "version '1' is not"),
    (lambda t: t["steps"][0].__setitem__("labels", ["⟨F0⟩"]), "labels must hold one string per node"),
    (lambda t: t["steps"][0].__setitem__("pieces", ["a"] * 99), "pieces must hold one string per committed"),
    (lambda t: t["steps"][0].__setitem__("pending", 7), "pending must be a string"),
    (lambda t: t["steps"][0].__setitem__("bonus_label", ["x"]), "bonus_label must be a string"),
    (lambda t: t.__setitem__("meta", []), "meta must be an object"),
    (lambda t: t.__setitem__("summary", "x"), "summary must be an object"),
    (lambda t: t.__setitem__("output_text", 5), "prompt and output_text must be strings"),
    (lambda t: t["output_ids"].append("7"), "output_ids must be a list of integers"),
    (lambda t: t.__setitem__("steps", {}), "steps must be a list"),
    (lambda t: t["steps"].__setitem__(0, "step"), "step 0 must be an object"),
    (lambda t: t["steps"][0]["texts"].__setitem__(0, 5), "texts must be strings"),
    (lambda t: t["steps"][0]["rank"].__setitem__(0, 0.5), "rank must be integers"),
    (lambda t: t["steps"][0].__setitem__("bonus_token", "7"), "bonus_token must be an integer"),
    (lambda t: t["steps"][0].__setitem__("expected_accept", "1"), "expected_accept must be a number"),
    (lambda t: t["steps"][0].__setitem__("ea_by_depth", "deep"), "ea_by_depth must be numbers"),
    (lambda t: t["steps"][0]["depth"].__setitem__(0, 2), "node 0 has wrong depth 2"),
    (lambda t: t["steps"][0].__setitem__("accepted", [0, 0]), "does not follow parents"),   # node 0 twice
    # Fields the views print or count: markup in the summary would reach the HTML export's page unescaped, and
    # a wrong type stopped the import with a bare error.
    (lambda t: t["summary"].__setitem__("new_tokens", "<img src=x onerror=alert(1)>"), "summary must hold numbers"),
    (lambda t: t["summary"].__setitem__("tau", float("nan")), "summary must hold numbers"),
    (lambda t: t["summary"].pop("tokens_per_s"), "summary must hold numbers"),
    (lambda t: t["summary"].__setitem__("acceptance_by_depth", ["<b>"]), "summary must hold numbers"),
    # a time or rate below 0 (views print it as one; a step without its own times keeps the file's mean)
    (lambda t: [s.pop("verify_ms") for s in t["steps"]] and t["summary"].__setitem__("mean_verify_ms", -5),
     "mean_verify_ms must be ≥ 0"),
    (lambda t: t["summary"].__setitem__("tokens_per_s", -3.0), "tokens_per_s, mean_draft_ms"),
    (lambda t: t["steps"][0].__setitem__("draft_ms", "12"), "draft_ms must be a number"),
    (lambda t: t["steps"][0].pop("accept_length"), "accept_length must be"),
    (lambda t: t["steps"][0].__setitem__("accept_length", "2"), "accept_length must be"),
    (lambda t: t["steps"][0].__setitem__("accept_length", 10**9), "accept_length must be"),
    (lambda t: t["steps"][0].__setitem__("committed", 3), "committed must be a list of token ids"),
    (lambda t: t["steps"][0].__setitem__("committed_text", 3), "committed_text must be a string"),
    (lambda t: t["steps"][0].__setitem__("bonus_text", None), "bonus_text must be a string"),
    (lambda t: t["steps"][0].__setitem__("rejected", [0]), "rejected must be a node index"),
    (lambda t: t["summary"].__setitem__("mean_expected_accept", None), "summary must hold numbers"),
    (lambda t: t["meta"].__setitem__("tree_temperature", "hot"), "tree_temperature must be a number"),
    (lambda t: t["meta"].__setitem__("threshold", [0.1]), "threshold must be a number"),
    (lambda t: t["meta"].__setitem__("max_depth", "deep"), "max_depth must be a number"),
    (lambda t: t["summary"].__setitem__("mean_expected_accept", [1.0]), "summary must hold numbers"),
    (lambda t: t["meta"].__setitem__("model", ["smollm2-eagle"]), "meta.model must be a model id"),
])
def test_bad_traces_rejected(trace, mutate, needle):
    with pytest.raises(BadInput, match=needle):
        loads(broken(trace, mutate))


@pytest.fixture(scope="module")
def auto_trace():
    cfg = DecodeConfig(method="opt-tree", nodes=0, max_new_tokens=20)
    return run(tiny_pair("eagle"), "", cfg, prompt_ids=[5, 6, 7])


def test_auto_trace_records_the_cost_curve_and_each_steps_objective(auto_trace):
    meta = auto_trace["meta"]
    assert meta["nodes"] == 0 and meta["auto_max_nodes"] == 60
    cost = meta["cost"]
    assert cost["tokens"][0] == 1 and len(cost["tokens"]) == len(cost["verify_ms"]) > 1
    assert len(cost["widths"]) == len(cost["layer_ms"]) > 1 and cost["threads"] >= 1
    # ... after the short prefix and again after a longer one (the tiny target's positions allow 384)
    longer = cost["longer"]
    assert cost["prefix_tokens"] == 128 < longer["prefix_tokens"] == 384 and longer["tokens"] == cost["tokens"]
    assert len(longer["verify_ms"]) == len(cost["verify_ms"]) and len(longer["layer_ms"]) == len(cost["layer_ms"])
    validate_trace(auto_trace)
    assert "auto" in auto_trace["steps"][0]
    for s in auto_trace["steps"]:
        if "auto" not in s:   # one token left to generate: the target picks it, no tree (the last step)
            assert not s["tokens"] and s is auto_trace["steps"][-1]
            continue
        auto = s["auto"]
        d, n = auto["chosen_depth"], auto["chosen_nodes"]
        assert len(s["tokens"]) == n and max(s["depth"], default=0) <= d
        assert auto["objective"][d - 1][n - 1] == max(max(r) for r in auto["objective"])
        assert len(auto["draft_model_ms"]) == len(auto["objective"]) == len(auto["widths"])


def test_the_auto_budget_prices_each_step_at_its_own_prefix(monkeypatch):
    """The decoder asks the cost model for the step's prefix: with verification flat after the short
    prefix and a whole forward per token after the longer one, a step after a few prompt tokens
    verifies a large tree and one after a long prompt a single node, from the same draft."""
    from opttree.engine import cost

    pair = tiny_pair("eagle")
    real = cost.load_or_measure(pair)
    near = [{**p, "best_ms": 10.0} for p in real["points"]]
    far = [{**p, "best_ms": 10.0 * p["tokens"]} for p in real["points"]]
    free = {"base_ms": 0.0, "points": [{**p, "best_ms": 0.01} for p in real["draft"]["points"]]}
    curve = {**real, "points": near, "draft": free, "prefix_tokens": 16,
             "longer": {"prefix_tokens": 256, "points": far, "draft": free}}
    monkeypatch.setattr(cost, "load_or_measure", lambda pair, refresh=False, log=None: curve)
    cfg = DecodeConfig(method="opt-tree", nodes=0, max_new_tokens=6)
    short = run(pair, "", cfg, prompt_ids=[5, 6, 7])
    long = run(pair, "", cfg, prompt_ids=[5, 6, 7] * 100)
    assert short["meta"]["cost"]["longer"]["prefix_tokens"] == 256
    assert len(short["steps"][0]["tokens"]) > 8 and len(long["steps"][0]["tokens"]) <= 1


def test_traces_without_the_auto_fields_still_load(auto_trace):
    old = copy.deepcopy(auto_trace)
    old["meta"].pop("cost")
    old["meta"].pop("auto_max_nodes")
    for s in old["steps"]:
        s.pop("auto", None)
    assert loads(dumps(old))["steps"]


def test_an_auto_step_that_found_no_candidate_still_loads():
    """Prompt lookup finds nothing to draft in a prompt without repeats: the auto budget's step has an empty
    objective and no best rate, and the trace loads and shows as the engine wrote it. The file is standard JSON
    (failed before: the missing rate was written as -Infinity, which JSON.parse and other strict readers refuse);
    a file that holds -Infinity there, as older ones do, still loads, and reads 0 there like a new one, so its
    download from the app is standard JSON too (failed before: the import kept -inf and wrote it back)."""
    from viz.metrics import step_metrics
    from viz.step_charts import why_shape

    cfg = DecodeConfig(method="opt-tree", nodes=0, max_new_tokens=4)
    text = dumps(run(tiny_pair("lookup"), "", cfg, prompt_ids=[5, 6, 7]))
    trace = strict_json(text)
    empty = trace["steps"][0]
    assert empty["tokens"] == [] and empty["auto"]["chosen_nodes"] == 0
    assert step_metrics(trace, 0) and why_shape(empty, trace["meta"])
    empty["auto"]["chosen_tokens_per_s"] = float("-inf")
    again = strict_json(dumps(loads(dumps(trace))))
    assert again["steps"][0]["auto"]["chosen_tokens_per_s"] == 0


@pytest.mark.parametrize("mutate,needle", [
    (lambda t: t["meta"].__setitem__("cost", "fast"), "meta.cost must be an object"),
    (lambda t: t["steps"][0]["auto"].__setitem__("chosen_tokens_per_s", "fast"), "tokens_per_s must be a number"),
    (lambda t: t["meta"]["cost"].__setitem__("verify_ms", [1.0]), "equal-length"),
    (lambda t: t["meta"]["cost"]["tokens"].__setitem__(0, 0), "positive"),
    (lambda t: t["meta"]["cost"]["longer"].__setitem__("verify_ms", [1.0]), "meta.cost.longer: tokens and"),
    (lambda t: t["meta"]["cost"]["longer"].__setitem__("longer", {}), "no further longer"),
    (lambda t: t["meta"]["cost"]["longer"].__setitem__("prefix_tokens", "<b>"), "prefix_tokens"),
    (lambda t: t["steps"][0]["auto"].__setitem__("fused_nodes", "many"), "auto.fused_nodes"),
    (lambda t: t["steps"][0]["auto"].__setitem__("objective", [["x"]]), "auto.objective"),
    (lambda t: t["steps"][0]["auto"].__setitem__("chosen_depth", 99), "point into the objective"),
    (lambda t: t["steps"][0]["auto"].__setitem__("widths", "wide"), "auto.draft_model_ms"),
    (lambda t: t["steps"][0].__setitem__("auto", []), "auto must be an object"),
])
def test_bad_auto_fields_rejected(auto_trace, mutate, needle):
    with pytest.raises(BadInput, match=needle):
        loads(broken(auto_trace, mutate))


@pytest.mark.parametrize("text", ["", "not json", "[1, 2]", "null", "{" * 100000, b"\xff\xfe\x00"])
def test_garbage_rejected(text):
    with pytest.raises(BadInput):
        loads(text)


def test_accept_length_counts_only_committed_draft_tokens():
    """When EOS ends a run inside the accepted path, the step's accept_length (and the summary's
    mean, and the E(A)-vs-A points) count the tokens committed, not the verifier's whole path."""
    from viz.step_charts import ea_points

    pair = tiny_pair("classic", draft_is_target=True)   # the draft proposes past EOS, the target accepts
    prompt = [1, 2, 3]
    free = run(pair, "", DecodeConfig(method="chain", max_depth=8, nodes=8, max_new_tokens=12), prompt_ids=prompt)
    out = free["output_ids"]
    k = next(i for i in range(2, 7) if out[i] not in out[:i])   # EOS: a token first emitted at index k
    pair.target.generation_config.eos_token_id = out[k]
    trace = run(pair, "", DecodeConfig(method="chain", max_depth=8, nodes=8, max_new_tokens=12), prompt_ids=prompt)
    (only,) = trace["steps"]                                      # one step: the chain reaches past EOS
    assert trace["output_ids"] == out[: k + 1] == only["committed"]
    assert len(only["accepted"]) > k + 1                          # the verifier accepted past EOS
    assert only["accept_length"] == k + 1 == trace["summary"]["mean_accepted_draft_tokens"]
    assert ea_points(trace)["a"] == [k + 1]
    validate_trace(trace)


def test_old_traces_with_uncut_accept_length_still_load_and_count_committed(trace):
    """A trace written when accept_length was the whole accepted path: it loads, and the views
    count what the step committed."""
    from opttree.trace import committed_draft
    from viz.step_charts import accept_bars, ea_points

    old = copy.deepcopy(trace)
    last = max(i for i, s in enumerate(old["steps"]) if s["tokens"])   # the last step that drafted a tree
    step = old["steps"][last]
    step["committed"] = step["committed"][:1]                  # a step cut after one token
    step["accept_length"] = len(step["accepted"]) + 2          # as an older engine may have recorded it
    loaded = loads(dumps(old))
    assert committed_draft(loaded["steps"][last]) == 1
    assert ea_points(loaded)["a"][-1] == 1 and accept_bars(loaded).data[0].y[last] == 1


def test_acceptance_figures_by_hand():
    """Three steps, counted by hand: trees of depth 3, 2 and 1; committed draft tokens 2, 0 and 1."""
    from opttree.trace import acceptance, by_depth_text

    def step(depths, accepted):
        return {"tokens": [0] * len(depths), "depth": depths, "accept_length": accepted}

    steps = [step([1, 1, 2, 3], 2), step([1, 2], 0), step([1, 1, 1], 1)]
    got = acceptance(steps)
    assert got["mean_accepted_draft_tokens"] == 1.0                    # (2 + 0 + 1) / 3
    assert got["draft_acceptance_rate"] == round(3 / 9, 4)             # 3 committed of 9 verified
    assert got["drafted_by_depth"] == [3, 2, 1]                        # trees reaching depth 1, 2, 3
    assert got["acceptance_by_depth"] == [round(2 / 3, 4), 0.5, 0.0]   # depth 2: step 1 of steps 1, 2
    assert by_depth_text(got["acceptance_by_depth"]) == "67% · 50% · 0%"
    assert acceptance([]) == {"mean_accepted_draft_tokens": 0.0, "draft_acceptance_rate": 0.0,
                              "acceptance_by_depth": [], "drafted_by_depth": []}


def test_a_share_never_rounds_onto_a_bound_it_does_not_reach():
    """8 of 2,000 verified draft tokens accepted is not 0%, 199 of 200 outputs matching is not 100%:
    the metrics line, Compare's table, the CLI and the bench reports print shares through percent."""
    from opttree.bench.report import pct
    from opttree.trace import percent
    from viz.metrics import acceptance_text

    assert [percent(x) for x in (0.0, 0.0055, 0.004, 0.5, 0.994, 0.995, 1.0)] == \
        ["0%", "1%", "<1%", "50%", "99%", ">99%", "100%"]
    assert pct(199 / 200) == ">99 %" and pct(1.0) == "100 %"
    line = acceptance_text({"mean_nodes": 500, "draft_acceptance_rate": 8 / 2000, "acceptance_by_depth": [1.0, 0.002]})
    assert "**<1%**" in line and "100% · <1%" in line



def test_counts_and_a_step_with_mismatched_lists_read_plainly(trace):
    """'1 node', not '1 nodes' (a tree's title, controller notes); a step whose texts do not match its
    tokens says what it should hold, not 'texts must have 0 entries'."""
    from opttree.trace import counted
    from viz.tree_figure import step_title

    assert [counted(n, "node") for n in (0, 1, 2)] == ["0 nodes", "1 node", "2 nodes"]
    one = copy.deepcopy(trace)
    step = one["steps"][0]
    for key in ("tokens", "texts", "parents", "depth", "q", "p_hat", "rank"):
        step[key] = step[key][:1]
    step["parents"], step["accepted"] = [-1], []
    assert " · 1 node<br>" in step_title(one, 0)
    bad = copy.deepcopy(trace)
    bad["steps"][0]["tokens"] = []
    with pytest.raises(BadInput, match="step 0: texts must hold one entry per node: tokens holds 0"):
        loads(dumps(bad))

def test_an_older_summary_name_is_replaced_on_load(trace):
    old = copy.deepcopy(trace)
    for key in ("mean_accepted_draft_tokens", "draft_acceptance_rate", "acceptance_by_depth", "drafted_by_depth"):
        del old["summary"][key]
    old["summary"]["mean_accept_length"] = trace["summary"]["mean_accepted_draft_tokens"]
    loaded = loads(dumps(old))
    assert "mean_accept_length" not in loaded["summary"]
    assert {k: loaded["summary"][k] for k in trace["summary"]} == trace["summary"]
