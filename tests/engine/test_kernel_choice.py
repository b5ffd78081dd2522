"""The CPU kernel chosen per machine, layer shape and row count (nets/few_row_linear.py, `choose_kernels`):
the table, the dispatch, the cache, the loaders and drafts following the target, the cost key, the
verify-cost sweep's columns, and decoding through a mixed choice staying exact."""

import copy
import json

import pytest
import torch
import torch.nn.functional as F
from reference import PROMPTS, reference
from tiny import tiny_pair

from opttree.config import DecodeConfig
from opttree.engine.speculative import run
from opttree.nets import few_row_linear as FR

# --- the kernel choice per row count: F.linear where it is faster on this machine ---

def test_the_choice_table_covers_every_row_count():
    table = FR.plain_table([1, 2, 16])
    assert table[1] and table[2] and not any(table[3:16]) and table[16]
    assert FR.plain_table([4])[4] and FR.plain_table([4])[5] and not FR.plain_table([4])[6]   # 5 takes 4's
    assert FR.plain_table([]) == ()


def test_chosen_row_counts_go_to_f_linear_and_the_rest_to_the_few_row_kernel(monkeypatch):
    torch.manual_seed(0)
    layer = torch.nn.Linear(48, 80)
    FR.use_few_row_linear(layer)
    FR.apply_choice(layer, {"80x48": [1, 2]})
    calls = []
    onednn = FR._onednn_linear()

    def counting(x, *args):
        calls.append(x.numel() // x.shape[-1])
        return onednn(x, *args)

    monkeypatch.setattr(FR, "_onednn_linear", lambda: counting)
    with torch.inference_mode():
        for rows in (1, 2, 3, 5, 30):
            x = torch.randn(1, rows, 48)
            torch.testing.assert_close(layer(x), F.linear(x, layer.weight, layer.bias), rtol=1e-5, atol=1e-5)
    assert calls == [3, 5, 30]
    assert layer.few_row_plain == {"80x48": [1, 2]}
    with torch.inference_mode():
        layer(torch.randn(48))                             # 1-D input: one row
        layer(torch.randn(2, 3, 48))                       # six rows: the few-row kernel
    assert calls == [3, 5, 30, 6]
    twin = copy.deepcopy(layer)                            # copies keep the choice
    assert twin._few_row_pack.plain == layer._few_row_pack.plain and twin.few_row_plain == {"80x48": [1, 2]}
    FR.use_plain_linear(layer)
    assert FR.plain_rows_of(layer) is None                 # nothing on the few-row kernel: no choice to report
    FR.use_few_row_linear(layer)
    assert FR.plain_rows_of(layer) == {"80x48": [1, 2]} and layer._few_row_pack.plain[2]   # round trip keeps it
    FR.apply_choice(layer, {"99x48": [1]})                 # another shape's choice: this one keeps the kernel
    assert FR.plain_rows_of(layer) == {}
    with torch.inference_mode():
        layer(torch.randn(1, 1, 48))
    assert calls[-1] == 1


def test_the_choice_is_measured_once_per_machine_and_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("OPTTREE_COSTS", str(tmp_path))
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.Linear(64, 32), torch.nn.Linear(32, 64))
    FR.use_few_row_linear(model)
    timed = []

    def fake_times(layers, reps=4):   # F.linear faster at 1-2 rows for 64x32, never for 32x64
        timed.append(len(layers))
        return {(s, r, k): (1.0 if (k == "plain") == (s == "64x32" and r <= 2) else 2.0)
                for s in ("64x32", "32x64") for r in FR.PROBE_ROWS for k in ("plain", "few-row")}

    monkeypatch.setattr(FR, "time_kernels", fake_times)
    assert FR.choose_kernels(model) == {"64x32": [1, 2]} and timed == [3]
    assert FR.plain_rows_from({("a", r, k): (0.98 if k == "plain" else 1.0) for r in FR.PROBE_ROWS
                               for k in ("plain", "few-row")}, ["a"]) == {"a": []}   # within the margin: kept
    assert model[0]._few_row_pack.plain[2] and not model[0]._few_row_pack.plain[3]
    assert model[1]._few_row_pack.plain == ()
    cached = list(tmp_path.glob("kernels_*.json"))
    assert len(cached) == 1 and json.loads(cached[0].read_text())["key"]["shapes"] == {"32x64": 1, "64x32": 2}
    FR.apply_choice(model, {})
    assert FR.choose_kernels(model) == {"64x32": [1, 2]} and timed == [3]   # read back, not timed again
    FR.choose_kernels(model, refresh=True)                                   # asked to: timed again
    assert timed == [3, 3]
    monkeypatch.setattr(torch, "get_num_threads", lambda: 97)                # another thread count: timed again
    FR.choose_kernels(model)
    assert timed == [3, 3, 3]
    assert FR.choose_kernels(torch.nn.Sequential()) is None                  # nothing on the few-row kernel
    for path in tmp_path.glob("kernels_*.json"):                             # a file missing timings: timed again
        data = json.loads(path.read_text())
        data["ms"].pop(next(iter(data["ms"])))
        path.write_text(json.dumps(data))
    FR.choose_kernels(model)
    assert timed == [3, 3, 3, 3]


def test_time_kernels_times_every_shape_row_count_and_kernel():
    model = torch.nn.Sequential(torch.nn.Linear(16, 24), torch.nn.Linear(24, 16))
    FR.use_few_row_linear(model)
    ms = FR.time_kernels(FR._fp32_layers(model), reps=1)
    assert set(ms) == {(s, r, k) for s in ("24x16", "16x24") for r in FR.PROBE_ROWS for k in ("plain", "few-row")}
    assert all(v > 0 for v in ms.values())


def _plain_wins_at(monkeypatch, wins: dict) -> None:
    """Timings in which F.linear wins at exactly `wins["rows"]` rows, for every shape (read at each call)."""
    monkeypatch.setattr(FR, "time_kernels", lambda layers, reps=4: {
        (FR._shape(m), r, k): (1.0 if (k == "plain") == (r == wins["rows"]) else 2.0)
        for m in layers for r in FR.PROBE_ROWS for k in ("plain", "few-row")})


def test_the_loaders_choose_for_the_target_and_drafts_follow_it(tmp_path, monkeypatch):
    from opttree.engine import cost
    from opttree.models.draft_assets import RANDOM_HEAD, load_feature_head
    from opttree.models.loading import prepare

    monkeypatch.setenv("OPTTREE_COSTS", str(tmp_path))
    _plain_wins_at(monkeypatch, {"rows": 1})
    pair = tiny_pair("none")
    prepare(pair.target, torch.device("cpu"))
    chosen = FR.plain_rows_of(pair.target)
    assert chosen and all(rows == [1] for rows in chosen.values())
    head = load_feature_head(RANDOM_HEAD, pair.target)
    shared = {FR._shape(m) for m in FR._fp32_layers(head)} & set(chosen)
    assert shared and FR.plain_rows_of(head) == {s: [1] for s in shared}
    pair.drafter_kind = "none"
    key = cost.cache_key(pair)
    assert key["plain_rows"] == chosen
    FR.apply_choice(pair.target, {})
    assert cost.cache_key(pair)["plain_rows"] == {} and cost.cache_key(pair) != key   # measured again
    FR.use_plain_linear(head)
    assert FR.plain_rows_of(head) is None            # a draft off the few-row kernel reports no choice


def test_a_draft_back_from_int8_takes_its_targets_choice_again(tmp_path, monkeypatch):
    if not FR._have_int8():
        pytest.skip("this PyTorch build has no dynamic int8 linear")
    from opttree.models.draft_assets import RANDOM_HEAD, load_feature_head
    from opttree.models.loading import prepare

    monkeypatch.setenv("OPTTREE_COSTS", str(tmp_path))
    _plain_wins_at(monkeypatch, {"rows": 1})
    pair = tiny_pair("none")
    prepare(pair.target, torch.device("cpu"))
    monkeypatch.setenv("OPTTREE_DRAFT_INT8", "1")
    head = load_feature_head(RANDOM_HEAD, pair.target)
    on_int8 = FR.plain_rows_of(head)
    monkeypatch.setenv("OPTTREE_DRAFT_INT8", "0")
    FR.use_few_row_linear(head, draft=True)          # back on fp32: new holders
    shared = {FR._shape(m) for m in FR._fp32_layers(head)} & set(FR.plain_rows_of(pair.target))
    assert shared and FR.plain_rows_of(head) == {s: [1] for s in shared} != on_int8
    assert all(m._few_row_pack.plain[1] for m in FR._fp32_layers(head) if FR._shape(m) in shared)


def test_a_refresh_chooses_again_and_the_draft_and_cost_key_follow(tmp_path, monkeypatch):
    from opttree.engine import cost
    from opttree.models.draft_assets import RANDOM_HEAD, load_feature_head
    from opttree.models.loading import prepare

    monkeypatch.setenv("OPTTREE_COSTS", str(tmp_path))
    wins = {"rows": 1}
    _plain_wins_at(monkeypatch, wins)
    pair = tiny_pair("none")
    prepare(pair.target, torch.device("cpu"))
    pair.drafter_kind, pair.draft_name = "eagle", "random-head"
    pair.draft_model = load_feature_head(RANDOM_HEAD, pair.target)
    wins["rows"] = 2
    curve = cost.load_or_measure(pair, refresh=True)
    assert set(map(tuple, FR.plain_rows_of(pair.target).values())) == {(2,)}
    assert FR.plain_rows_of(pair.draft_model) and all(v == [2] for v in FR.plain_rows_of(pair.draft_model).values())
    assert curve["key"]["plain_rows"] == FR.plain_rows_of(pair.target)
    assert curve["key"]["draft_plain_rows"] == FR.plain_rows_of(pair.draft_model)


def test_the_verify_cost_curve_times_the_chosen_kernels_beside_each_kernel_alone():
    from opttree.bench.verify_cost import verify_cost_curve

    pair = tiny_pair("none")
    FR.use_few_row_linear(pair.target)
    FR.apply_choice(pair.target, {FR._shape(m): [1] for m in FR._fp32_layers(pair.target)})
    chosen = FR.plain_rows_of(pair.target)
    cost = verify_cost_curve(pair, (1, 3), reps=1, warmup=0)
    assert cost["meta"]["plain_rows"] == chosen
    assert all(p["few_row_only_median_ms"] > 0 and p["plain_median_ms"] > 0 for p in cost["points"])
    assert FR.plain_rows_of(pair.target) == chosen        # left as it was
    FR.apply_choice(pair.target, {})
    assert "few_row_only_median_ms" not in verify_cost_curve(pair, (1,), reps=1, warmup=0)["points"][0]


@pytest.mark.parametrize("drafter", ["classic", "eagle"])
def test_decoding_with_a_mixed_kernel_choice_stays_exact(drafter):
    """AR's one-row forwards on F.linear, trees of several rows on the few-row kernel (as on an AVX-512
    Xeon): the output is still the target's own greedy output."""
    pair = tiny_pair(drafter, eos=9)
    for model in (pair.target, pair.draft_model):
        FR.use_few_row_linear(model)
        FR.apply_choice(model, {FR._shape(m): [1, 2] for m in FR._fp32_layers(model)})
    for nodes in (1, 4):
        for prompt in PROMPTS:
            ref = reference(pair.target, prompt, 24)
            cfg = DecodeConfig(method="opt-tree", nodes=nodes, threshold=0.0, max_depth=5, max_new_tokens=24)
            assert run(pair, "", cfg, prompt_ids=prompt)["output_ids"] == ref
