"""The verify cost surface (timed with a synthetic clock), its cache, the batched throughput model and
the page; the batched forwards themselves run on the tiny models."""

import pytest
from tiny import tiny_pair

from opttree.bench import serving_report
from opttree.engine import batch_cost, cost
from viz.serving import speedup_figure


class FakeClock:
    """Seconds that move only when a fake forward says so."""

    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def fake_forward(clock, ms_of):
    calls = []

    def run(b, t):
        calls.append((b, t))
        clock.now += ms_of(b, t) / 1e3
    return run, calls


def linear_ms(b, t):
    return 5.0 + 0.5 * b * t      # a fixed cost plus one per token in the batch


def test_time_surface_times_every_point_with_the_given_clock():
    clock = FakeClock()
    run, calls = fake_forward(clock, linear_ms)
    times = batch_cost.time_surface(run, (1, 4), (1, 8), reps=2, warmup=1, clock=clock)
    assert set(times) == {(1, 1), (1, 8), (4, 1), (4, 8)}
    assert all(ms == pytest.approx([linear_ms(*bt)] * 2) for bt, ms in times.items())
    assert len(calls) == 3 * 4 and calls[:4] == [(1, 1), (1, 8), (4, 1), (4, 8)] and calls[4:8] == calls[3::-1]


def synthetic_surface(ms_of=linear_ms, batches=(1, 2, 4, 8, 16), tokens=(1, 2, 4, 8, 16, 32, 64)):
    times = {(b, t): [ms_of(b, t)] for b in batches for t in tokens}
    return batch_cost.surface_from_times(times, {"device_name": "test"}, 1.0, 1)


def test_the_model_reads_the_surface_and_the_acceptance_vector():
    surface = synthetic_surface()
    assert batch_cost.verify_ms(surface, 4, 8) == pytest.approx(linear_ms(4, 8))
    assert batch_cost.verify_ms(surface, 4, 6) == pytest.approx(linear_ms(4, 6))     # linear between points
    assert batch_cost.verify_ms(surface, 3, 8) == pytest.approx(linear_ms(3, 8))     # and between batch sizes
    a = (0.7, 0.1)
    ar = batch_cost.model_point(surface, a, 0, 2)
    assert ar["tokens_per_s"] == pytest.approx(2 * 1000.0 / linear_ms(2, 1), rel=1e-4)
    tree = batch_cost.model_point(surface, a, 4, 2)
    ea = tree["expected_accepted"]
    assert ea == pytest.approx(0.7 + 0.49 + 0.343 + 0.2401, abs=1e-4)     # the DP's tree: a chain of 4
    assert tree["tokens_per_s"] == pytest.approx(2 * (ea + 1) * 1000.0 / linear_ms(2, 5), rel=1e-3)


def test_speculation_stops_paying_as_the_batch_grows_on_a_compute_bound_surface():
    table = batch_cost.model_table(synthetic_surface(), (0.7, 0.1))
    best = batch_cost.best_by_batch(table)
    assert best[1]["nodes"] > 0 and best[1]["speedup"] > 1.0      # the fixed cost dominates a lone sequence
    assert best[16]["nodes"] < best[1]["nodes"]                   # a big batch wants a smaller tree, or none
    flat = batch_cost.best_by_batch(batch_cost.model_table(synthetic_surface(lambda b, t: 10.0), (0.7, 0.1)))
    assert all(r["nodes"] == max(batch_cost.MODEL_NODES) or r["speedup"] > 1 for r in flat.values())


def test_drafting_is_paid_per_sequence():
    surface = synthetic_surface(lambda b, t: 10.0)
    free = batch_cost.model_point(surface, (0.7,), 4, 8)
    surface["draft"] = {"base_ms": 2.0, "widths": [1, 64], "layer_ms": [1.0, 1.0]}
    paid = batch_cost.model_point(surface, (0.7,), 4, 8)
    assert paid["step_ms"] == pytest.approx(free["step_ms"] + 8 * (2.0 + 3 * 1.0))   # a chain of 4: 3 more layers


def test_surface_is_measured_once_then_read_from_the_cost_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("OPTTREE_COSTS", str(tmp_path))
    pair = tiny_pair("classic")
    clock = FakeClock()
    run, calls = fake_forward(clock, linear_ms)
    monkeypatch.setattr(batch_cost, "forward_runner", lambda pair, batches: run)
    first = batch_cost.load_or_measure_surface(pair, (1, 2), (1, 4), reps=2, clock=clock)
    assert {(p["batch"], p["tokens"]): p["best_ms"] for p in first["points"]} == {
        (b, t): pytest.approx(linear_ms(b, t)) for b in (1, 2) for t in (1, 4)}
    # the target's alone: its key has no draft, as the verify half's has none
    assert cost.cache_path(first["key"]).parent == tmp_path and "drafter" not in first["key"]
    assert {k: v for k, v in first["key"].items() if k in cost.target_key(pair)} == cost.target_key(pair)
    assert "_surface_" in cost.cache_path(first["key"]).name
    n = len(calls)
    again = batch_cost.load_or_measure_surface(pair, (1, 2), (1, 4), reps=2, clock=clock)
    assert again == first and len(calls) == n                       # read back, not measured
    batch_cost.load_or_measure_surface(pair, (1, 2), (1, 4), refresh=True, reps=2, clock=clock)
    assert len(calls) > n
    other = batch_cost.load_or_measure_surface(pair, (1, 2, 4), (1, 4), reps=1, clock=clock)
    assert other["key"] != first["key"]                              # another grid, another cache entry


def test_the_batched_forwards_run_on_a_real_model():
    pair = tiny_pair("classic")
    run = batch_cost.forward_runner(pair, (1, 3), prefix_tokens=16)
    run(3, 5)
    run(1, 1)
    ar = serving_report.batched_ar(pair, [[1, 2, 3, 4], [5, 6, 7, 8, 9]], 3, steps=4)
    assert ar["batch"] == 3 and ar["prefix_tokens"] == 4 and ar["median_ms"] > 0


def test_the_figure_and_the_page():
    surface = synthetic_surface()
    table = batch_cost.model_table(surface, (0.7, 0.1))
    fig = speedup_figure(table, batch_cost.best_by_batch(table))
    assert len(fig.data) == 6 and fig.data[0].x[0] == 0 and fig.data[0].y[0] == pytest.approx(1.0)
    data = {"machine": {"cpu": "Test CPU", "torch_threads": 2, "date_utc": "2026-01-01"}, "target": "t",
            "drafter": "eagle", "acceptance_by_rank": [0.7, 0.1], "acceptance_source": "card",
            "surface": surface, "model": table, "best_by_batch": batch_cost.best_by_batch(table),
            "check_prompts": [1, 2], "tree_prompts": 1,
            "check_batches": [{"batch": 1, "prefix_tokens": 20, "median_ms": 6.0, "modelled_ms": 5.5,
                               "measured_over_modelled": 1.09}],
            "check_trees": [{"nodes": 4, "tau": 1.9, "modelled_tau": 2.0, "step_ms": 9.0, "modelled_step_ms": 8.0}]}
    page = serving_report.serving_markdown(data, "opttree serving")
    assert page.startswith("# Speculation in a batch: Test CPU") and "model built from measurements" in page
    assert "| 16 |" in page and "By the model," in page


def _page(speedups: dict) -> str:
    """The page for a model table given as {batch: {nodes: speedup}} (tokens/s = 10 · B · speedup)."""
    table = [{"batch": b, "nodes": n, "speedup": x, "tokens_per_s": 10 * b * x} for b, row in speedups.items()
             for n, x in row.items()]
    surface = synthetic_surface()
    data = {"machine": {"cpu": "Test CPU", "torch_threads": 2, "date_utc": "2026-01-01"}, "target": "t",
            "drafter": "eagle", "acceptance_by_rank": [0.7, 0.1], "acceptance_source": "card", "surface": surface,
            "model": table, "best_by_batch": batch_cost.best_by_batch(table), "check_prompts": [1],
            "tree_prompts": 1, "check_batches": [], "check_trees": []}
    return serving_report.serving_markdown(data, "opttree serving")


def test_the_page_names_where_a_tree_pays_when_it_pays_again_at_a_larger_batch():
    """The page's sentence on where speculation pays says what the Serving tab's does (`batch_summary`): where
    a tree pays again at a larger batch (measured costs are noisy), it names both sides. Failed before: the
    page kept its own copy of the rule and read "from B = 4 on the model's best is plain AR" while its own
    table starred a 2-node tree at B = 8."""
    page = _page({1: {0: 1.0, 2: 1.4, 4: 1.6}, 2: {0: 1.0, 2: 1.1, 4: 1.2}, 4: {0: 1.0, 2: 0.97, 4: 0.9},
                  8: {0: 1.0, 2: 1.08, 4: 0.8}})
    assert "| 8 | ×1.00 | ×1.08 | ×0.80 | 2 (86 tok/s) |" in page
    assert "from B = 4 on" not in page and "a tree pays at B = 1, 2, 8 and not at B = 4" in page
    clean = _page({1: {0: 1.0, 2: 1.4, 4: 1.6}, 2: {0: 1.0, 2: 1.1, 4: 1.2}, 4: {0: 1.0, 2: 0.97, 4: 0.9}})
    assert "speculation pays up to B = 2 and stops paying from B = 4" in clean
