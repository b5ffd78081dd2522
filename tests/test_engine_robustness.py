"""Engine-level robustness: fuzzed settings, prompts and traces; isolation of concurrent runs."""

import json
import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tiny import tiny_pair

from opttree.config import LIMITS, METHODS, DecodeConfig
from opttree.decoding.prompts import clean_prompt
from opttree.decoding.speculative import Cancelled, run, stream_run
from opttree.errors import BadInput
from opttree.trace import loads

ANY = st.one_of(st.none(), st.booleans(), st.integers(-10**12, 10**12), st.floats(allow_nan=True),
                st.text(max_size=20), st.lists(st.integers(), max_size=3))


@settings(max_examples=300, deadline=None)
@given(method=st.one_of(st.sampled_from(METHODS), st.text(max_size=12)), nodes=ANY, threshold=ANY,
       max_depth=ANY, temperature=ANY, max_new_tokens=ANY, seed=ANY)
def test_config_accepts_only_valid_values(method, nodes, threshold, max_depth, temperature, max_new_tokens, seed):
    try:
        cfg = DecodeConfig(method=method, nodes=nodes, threshold=threshold, max_depth=max_depth,
                           temperature=temperature, max_new_tokens=max_new_tokens, seed=seed)
    except BadInput as exc:
        assert str(exc)
        return
    for name, (lo, hi) in LIMITS.items():
        assert lo <= getattr(cfg, name) <= hi
    assert cfg.method in METHODS and isinstance(cfg.nodes, int) and isinstance(cfg.max_depth, int)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_prompt_cleaning_never_crashes(text):
    try:
        out = clean_prompt(text)
    except BadInput:
        assert not text.strip() or not any(c.isprintable() and not c.isspace() for c in text)
        return
    out.encode("utf-8")  # always valid UTF-8 afterwards
    assert out.strip()


def test_prompt_limits():
    with pytest.raises(BadInput, match="too long"):
        clean_prompt("x" * 100_000)
    cleaned = clean_prompt("ok \udcff\x00\x07 fine")
    assert cleaned.startswith("ok \ufffd") and cleaned.endswith(" fine") and "\x00" not in cleaned


JSON = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=8)),
                    lambda inner: st.one_of(st.lists(inner, max_size=4),
                                            st.dictionaries(st.text(max_size=8), inner, max_size=4)),
                    max_leaves=30)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(JSON)
def test_trace_import_rejects_garbage_cleanly(obj):
    with pytest.raises(BadInput):
        loads(json.dumps(obj))


def test_concurrent_runs_equal_solo_runs():
    """Runs share the models read-only but own caches and RNG: threads change nothing."""
    pair = tiny_pair("eagle", vocab=48)
    jobs = [(m, t, s, [s, s + 1, s + 2]) for s, (m, t) in enumerate(
        [("opt-tree", 0.0), ("opt-tree", 1.0), ("binary", 0.7), ("eagle-dynamic", 0.0),
         ("chain", 1.0), ("ar", 0.0), ("eagle-static", 1.2), ("opt-tree", 0.5)])]

    def one(job):
        method, temp, seed, prompt = job
        cfg = DecodeConfig(method=method, temperature=temp, seed=seed, nodes=16, max_new_tokens=20)
        return run(pair, "", cfg, prompt_ids=prompt)["output_ids"]

    solo = [one(j) for j in jobs]
    results = [None] * len(jobs)

    def worker(i):
        results[i] = one(jobs[i])

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == solo


def test_cancel_stops_between_steps_and_next_run_is_clean():
    pair = tiny_pair("classic")
    steps = []
    with pytest.raises(Cancelled):
        for trace in stream_run(pair, "", DecodeConfig(max_new_tokens=50, nodes=8), prompt_ids=[1, 2, 3],
                                cancel=lambda: len(steps) >= 2):
            steps.append(len(trace["steps"]))
    assert steps == [1, 2]
    again = run(pair, "", DecodeConfig(max_new_tokens=50, nodes=8), prompt_ids=[1, 2, 3])
    fresh = run(tiny_pair("classic"), "", DecodeConfig(max_new_tokens=50, nodes=8), prompt_ids=[1, 2, 3])
    assert again["output_ids"] == fresh["output_ids"]


def test_exception_mid_verification_leaves_shared_models_intact(monkeypatch):
    """A run that dies inside verification leaves nothing behind for the next run."""
    import opttree.decoding.speculative as spec

    pair = tiny_pair("eagle")
    cfg = DecodeConfig(max_new_tokens=16, nodes=8)
    before = run(pair, "", cfg, prompt_ids=[7, 8, 9])["output_ids"]
    real = spec.verify_tree
    calls = {"n": 0}

    def flaky(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("simulated failure during verification")
        return real(*args, **kwargs)

    monkeypatch.setattr(spec, "verify_tree", flaky)
    with pytest.raises(RuntimeError):
        run(pair, "", cfg, prompt_ids=[7, 8, 9])
    monkeypatch.setattr(spec, "verify_tree", real)
    assert run(pair, "", cfg, prompt_ids=[7, 8, 9])["output_ids"] == before


def test_largest_allowed_tree_runs():
    """Server-side maximum settings (500 nodes, depth 20, δ 0) complete and stay exact."""
    pair = tiny_pair("classic", vocab=64)
    cfg = DecodeConfig(method="opt-tree", nodes=500, max_depth=20, threshold=0.0, max_new_tokens=12)
    trace = run(pair, "", cfg, prompt_ids=[1, 2, 3])
    ar = run(pair, "", DecodeConfig(method="ar", max_new_tokens=12), prompt_ids=[1, 2, 3])
    assert trace["output_ids"] == ar["output_ids"]
    assert max(len(s["tokens"]) for s in trace["steps"]) == 500
    with pytest.raises(BadInput):
        DecodeConfig(nodes=501)
    with pytest.raises(BadInput):
        DecodeConfig(max_depth=21)


def test_a_prompt_that_encodes_to_nothing_is_bad_input():
    # The tiny tokenizer knows only words like "t3": this prompt encodes to no ids at all, and the
    # first step would have no root token (it once crashed with an IndexError).
    from tiny import tiny_pair

    from opttree.decoding.speculative import run

    pair = tiny_pair("classic", draft_is_target=True)
    with pytest.raises(BadInput, match="encodes to no tokens"):
        run(pair, "q3 q3", DecodeConfig(max_new_tokens=3), chat=False)
