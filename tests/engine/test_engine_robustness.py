"""Engine-level robustness: fuzzed settings, prompts and traces; isolation of concurrent runs."""

import json
import threading

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from settings_fuzz import JUNK, TINY, accepted, boundary_values
from tiny import tiny_pair

from opttree.config import LIMITS, METHODS, SETTINGS, DecodeConfig, python_type
from opttree.decoding.prompts import clean_prompt
from opttree.decoding.sampling import warp
from opttree.engine.speculative import Cancelled, run, stream_run, warm_up
from opttree.errors import BadInput
from opttree.trace_file import loads

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


BOUNDARY_CASES = [(name, v) for name in SETTINGS for v in boundary_values(name) + JUNK]


@pytest.mark.parametrize("name,value", BOUNDARY_CASES, ids=[f"{n}={v!r}"[:40] for n, v in BOUNDARY_CASES])
def test_every_setting_accepts_exactly_its_declared_range(name, value):
    if accepted(name, value):
        got = getattr(DecodeConfig(**{name: value}), name)
        choice = SETTINGS[name].metadata["choices"] is not None   # method, retrieval, recycling_scope
        assert type(got) is python_type(name) and got == (value if choice else python_type(name)(float(value)))
    else:
        with pytest.raises(BadInput, match=name if name != "method" else "unknown method"):
            DecodeConfig(**{name: value})


# Every accepted edge of every setting, run end to end on a tiny pair: a result or a clear error.
EDGE_RUNS = [(name, v) for name in SETTINGS for v in boundary_values(name) if accepted(name, v)]


@pytest.mark.parametrize("name,value", EDGE_RUNS, ids=[f"{n}={v!r}" for n, v in EDGE_RUNS])
def test_every_accepted_edge_runs(name, value, edge_pair):
    # top_k, top_p and the seed only act when sampling; the temperature brings its own value.
    base = dict(method="opt-tree", nodes=12, max_depth=4, max_new_tokens=6, temperature=1.0)
    cfg = DecodeConfig(**{**base, name: value})
    try:
        trace = run(edge_pair, "", cfg, prompt_ids=[1, 2, 3])
    except BadInput as exc:   # the accepted settings a tiny model cannot take: its context, and the
        # bundled length predictor (it reads SmolLM2's hidden states; its card names that target)
        assert (name == "max_new_tokens" and "context" in str(exc)) or (
            name == "length_control" and value == "predictor" and "trained for the target" in str(exc))
        return
    assert 1 <= len(trace["output_ids"]) <= cfg.max_new_tokens


@pytest.fixture(scope="module")
def edge_pair():
    return tiny_pair("eagle", vocab=64)


@pytest.mark.parametrize("temperature", [1.0, 1e-3, 1e-38, 1e-300, TINY])
def test_sampling_never_overflows_and_tiny_temperatures_approach_greedy(temperature):
    torch.manual_seed(0)
    logits = torch.randn(3, 50) * 20
    probs = warp(logits, temperature)
    assert torch.isfinite(probs).all() and torch.allclose(probs.sum(-1), torch.ones(3, dtype=probs.dtype))
    if temperature < 1e-30:
        assert (probs.argmax(-1) == logits.argmax(-1)).all() and (probs.max(-1).values == 1.0).all()


def test_top_p_zero_keeps_only_the_most_likely_token():
    logits = torch.tensor([[0.1, 2.0, -1.0, 1.9], [3.0, 0.0, 0.0, 0.0]])
    for top_p in (0.0, TINY, 0.01):
        assert warp(logits, 1.0, top_p=top_p).tolist() == [[0.0, 1.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]]
    kept = warp(logits, 1.0, top_p=0.6)[0]
    assert (kept > 0).tolist() == [False, True, False, True]   # the top two reach 0.6


def test_top_k_keeps_exactly_the_k_most_likely_tokens():
    """The lossless tests compare runs with `warp` itself, so top-k's meaning is checked here against a
    distribution written out by hand: the softmax of the k largest logits at T, zero elsewhere."""
    logits = torch.tensor([[0.5, 3.0, -1.0, 2.0, 1.0, 0.0], [4.0, 1.0, 2.5, 0.0, -2.0, 3.5]], dtype=torch.float64)
    for k, temperature in ((1, 1.0), (2, 0.7), (3, 1.5), (5, 1.0)):
        top = torch.topk(logits, k, dim=-1).indices
        want = torch.zeros_like(logits).scatter(-1, top, torch.softmax(logits.gather(-1, top) / temperature, -1))
        torch.testing.assert_close(warp(logits, temperature, top_k=k), want)
    assert warp(logits, 1.0, top_k=6).tolist() == warp(logits, 1.0).tolist()      # k = vocabulary: no cut
    # top-k first, then top-p inside what it kept: k = 3 keeps 3.0, 2.0, 1.0 (0.665, 0.245, 0.090)
    assert (warp(logits[:1], 1.0, top_k=3, top_p=0.8)[0] > 0).tolist() == [False, True, False, True, False, False]


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
    import opttree.engine.target_state as spec  # where the loop calls verify_tree

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


def test_a_target_too_short_to_measure_its_costs_is_bad_input(tmp_path, monkeypatch):
    # 128 positions leave no room for the cost curve's 128-token prefix and 64-token tree (timing them
    # would index past the position embedding): the first run refuses the target instead.
    from tiny import tiny_pair
    from transformers import GPT2Config, GPT2LMHeadModel

    from opttree.engine.speculative import run

    monkeypatch.setenv("OPTTREE_COSTS", str(tmp_path))       # nothing cached: the run measures
    torch.manual_seed(0)
    pair = tiny_pair("none")
    pair.target = GPT2LMHeadModel(GPT2Config(vocab_size=64, n_embd=32, n_layer=1, n_head=2, n_positions=128)).eval()
    with pytest.raises(BadInput, match="has 128 positions"):
        run(pair, "t3 t4 t5", DecodeConfig(method="ar", max_new_tokens=3), chat=False)


def test_a_prompt_that_encodes_to_nothing_is_bad_input():
    # The tiny tokenizer knows only words like "t3": this prompt encodes to no ids at all, and the
    # first step would have no root token (it once crashed with an IndexError).
    from tiny import tiny_pair

    from opttree.engine.speculative import run

    pair = tiny_pair("classic", draft_is_target=True)
    with pytest.raises(BadInput, match="encodes to no tokens"):
        run(pair, "q3 q3", DecodeConfig(max_new_tokens=3), chat=False)


def test_a_cancelled_run_stops_before_its_prefill():
    """Stop (or a time limit already used up, e.g. by loading the model) ends the run before it
    spends a target forward on the prompt."""
    pair = tiny_pair("classic")
    forwards = []
    hook = pair.target.register_forward_hook(lambda *args: forwards.append(1))
    try:
        with pytest.raises(Cancelled):
            run(pair, "", DecodeConfig(max_new_tokens=5, nodes=4), prompt_ids=[1, 2, 3], cancel=lambda: True)
        assert forwards == []
        run(pair, "", DecodeConfig(max_new_tokens=5, nodes=4), prompt_ids=[1, 2, 3])
        assert forwards                   # the hook sees forwards: the check above is not vacuous
    finally:
        hook.remove()


def test_feature_head_gets_only_the_features_it_has_not_read(monkeypatch):
    """The loop hands the feature head the target features of the tokens committed since its last
    step, never the whole history (which would be O(L²) copies over a run); the output is unchanged."""
    from opttree.drafters.feature_head import FeatureHeadDrafter

    pair = tiny_pair("eagle")
    cfg = DecodeConfig(method="opt-tree", nodes=8, max_new_tokens=30)
    before = run(pair, "", cfg, prompt_ids=[5, 6, 7, 8])["output_ids"]
    seen = []
    real = FeatureHeadDrafter.begin_step

    def recording(self, committed, features):
        seen.append((len(committed), features.shape[0]))
        return real(self, committed, features)

    monkeypatch.setattr(FeatureHeadDrafter, "begin_step", recording)
    assert run(pair, "", cfg, prompt_ids=[5, 6, 7, 8])["output_ids"] == before
    assert len(seen) > 3 and seen[0] == (4, 3)        # the prefill: every prompt token but the root
    for (prev, _), (now, rows) in zip(seen, seen[1:]):
        assert rows == now - prev                       # the root's row and the accepted nodes' rows


def test_feature_head_reads_the_whole_history_or_only_new_rows_alike():
    """begin_step takes the full feature history (as before) or only its unread tail: same draft."""
    from opttree.drafters.feature_head import FeatureHeadDrafter

    pair = tiny_pair("eagle")
    seq = [5, 6, 7, 8, 9, 10, 11]
    with torch.no_grad():
        feats = pair.target(input_ids=torch.tensor([seq]), output_hidden_states=True).hidden_states[-1][0]
    full, tail = (FeatureHeadDrafter(pair.draft_model, pair.target, 64) for _ in range(2))
    for a, b in [(0, 4), (4, 6), (6, 7)]:      # steps that commit up to seq[:b]; features of seq[:b-1]
        full.begin_step(seq[:b], feats[: b - 1])
        tail.begin_step(seq[:b], feats[max(a - 1, 0): b - 1])
        # the root's draft: probabilities over the draft vocabulary and their token ids (None: all ids)
        assert all(x is y is None or torch.equal(x, y) for x, y in zip(full.root_draft, tail.root_draft))
        full.end_step([])
        tail.end_step([])
    with pytest.raises(ValueError, match="features start at position"):
        tail.begin_step(seq + [12], feats[-1:][:0])   # rows missing: refused, never misread


def test_warm_up_drafts_and_verifies_and_changes_no_later_run():
    """warm_up runs the target and the draft (the forwards whose first calls are slow) and leaves nothing
    behind: a run after it equals the same run on an identical pair that was never warmed."""
    for kind in ("eagle", "classic", "early-exit", "recycling"):
        pair, fresh = tiny_pair(kind), tiny_pair(kind)
        parts = [pair.target] + ([pair.draft_model] if pair.draft_model is not None else [])
        calls = {id(m): [] for m in parts}
        hooks = [sub.register_forward_hook(lambda *a, c=calls[id(m)]: c.append(1))
                 for m in parts for sub in m.modules()]
        try:
            warm_up(pair)
        finally:
            for h in hooks:
                h.remove()
        assert all(calls.values()), f"{kind}: warm_up left a model unrun"
        cfg = DecodeConfig(nodes=10, max_depth=4, max_new_tokens=12)
        after, never = run(pair, "t1 t2 t3 t4", cfg), run(fresh, "t1 t2 t3 t4", cfg)
        assert after["output_ids"] == never["output_ids"], kind
        assert [s["parents"] for s in after["steps"]] == [s["parents"] for s in never["steps"]], kind
