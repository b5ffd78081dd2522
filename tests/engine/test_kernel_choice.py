"""The CPU kernel chosen per machine, layer shape and row count (nets/kernel_choice.py; the kernels and
the dispatch in nets/few_row_linear.py): the table, the dispatch, MKL's packed GEMM, the check against
F.linear, the cache, the loaders and drafts following the target, the cost key, the verify-cost sweep's
columns, and decoding through a mixed choice staying exact."""

import copy
import json

import pytest
import torch
import torch.nn.functional as F
from reference import PROMPTS, reference
from tiny import tiny_pair

from opttree.bench.verify_cost import verify_cost_curve
from opttree.config import DecodeConfig
from opttree.engine import cost
from opttree.engine.speculative import run
from opttree.models.draft_assets import RANDOM_HEAD, load_feature_head
from opttree.models.loading import prepare
from opttree.nets import few_row_linear as FR
from opttree.nets import kernel_choice as KC

needs_mkl = pytest.mark.skipif(not FR.have_mkl(), reason="this PyTorch build has no MKL packed GEMM")

# --- the kernel choice per row count: the fastest kernel on this machine ---

PLAIN, ONEDNN, MKL = (FR.KERNELS.index(k) for k in (FR.PLAIN, FR.ONEDNN, FR.MKL))


def test_the_choice_table_covers_every_row_count():
    table = FR.kernel_table({"plain": [1, 2, 64], "mkl": [4, 16]})
    assert table[1:4] == (PLAIN, PLAIN, ONEDNN) and table[4:6] == (MKL, MKL) and table[0] == table[1]  # 0: as 1
    assert set(table[6:16]) == {ONEDNN} and set(table[16:64]) == {MKL} and table[64] == PLAIN == table[-1]
    assert len(table) == FR.PROBE_ROWS[-1] + 1        # the last entry serves every larger count
    assert FR.kernel_table({"plain": [4]})[4:7] == (PLAIN, PLAIN, ONEDNN)          # 5 takes 4's choice
    assert FR.kernel_table({}) == () and FR.kernel_table({"mkl": []}) == ()


def test_chosen_row_counts_go_to_their_kernel_and_the_rest_to_onednn(monkeypatch):
    torch.manual_seed(0)
    layer = torch.nn.Linear(48, 80)
    FR.use_few_row_linear(layer)
    FR.apply_choice(layer, {"80x48": {"plain": [1, 2]}})
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
    assert FR.choice_of(layer) == {"80x48": {"plain": [1, 2]}}
    with torch.inference_mode():
        layer(torch.randn(48))                             # 1-D input: one row
        layer(torch.randn(2, 3, 48))                       # six rows: the few-row kernel
    assert calls == [3, 5, 30, 6]
    twin = copy.deepcopy(layer)                            # copies keep the choice
    assert twin._few_row_pack.table == layer._few_row_pack.table and FR.choice_of(twin) == FR.choice_of(layer)
    FR.use_plain_linear(layer)
    assert FR.choice_of(layer) is None                     # nothing on the engine's kernels: no choice to report
    FR.use_few_row_linear(layer)
    assert FR.choice_of(layer) == {"80x48": {"plain": [1, 2]}} and layer._few_row_pack.table[2] == PLAIN   # kept
    FR.apply_choice(layer, {"99x48": {"plain": [1]}})      # another shape's choice: this one keeps oneDNN
    assert FR.choice_of(layer) == {}
    with torch.inference_mode():
        layer(torch.randn(1, 1, 48))
    assert calls[-1] == 1


def test_the_choice_is_measured_once_per_machine_and_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("OPTTREE_COSTS", str(tmp_path))
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.Linear(64, 32), torch.nn.Linear(32, 64))
    FR.use_few_row_linear(model)
    timed = []

    def fake_times(layers, reps=4):   # 64x32: F.linear fastest at 1-2 rows, MKL at 8; 32x64: oneDNN throughout
        timed.append(len(layers))
        fastest = {("64x32", 1): "plain", ("64x32", 2): "plain", ("64x32", 8): "mkl"}
        return {(s, r, k): (1.0 if fastest.get((s, r), "onednn") == k else 2.0)
                for s in ("64x32", "32x64") for r in FR.PROBE_ROWS for k in KC.timed_kernels()}

    monkeypatch.setattr(KC, "time_kernels", fake_times)
    monkeypatch.setattr(KC, "timed_kernels", lambda: FR.KERNELS)
    want = {"64x32": {"mkl": [8], "plain": [1, 2]}}
    assert KC.choose_kernels(model) == want and timed == [3]
    assert model[0]._few_row_pack.table[2] == PLAIN and model[0]._few_row_pack.table[3] == ONEDNN
    assert model[0]._few_row_pack.table[8:12] == (MKL,) * 4 and model[1]._few_row_pack.table == ()
    near = {("a", r, k): (0.98 if k != "onednn" else 1.0) for r in FR.PROBE_ROWS for k in FR.KERNELS}
    assert KC.choice_from(near, ["a"]) == {"a": {}}                            # within the margin: oneDNN kept
    assert KC.choice_from({**near, ("a", 4, "mkl"): 0.5}, ["a"]) == {"a": {"mkl": [4]}}
    cached = list(tmp_path.glob("kernels_*.json"))
    data = json.loads(cached[0].read_text())
    assert len(cached) == 1 and data["key"]["shapes"] == {"32x64": 1, "64x32": 2} and data["key"]["kernels"]
    FR.apply_choice(model, {})
    assert KC.choose_kernels(model) == want and timed == [3]                # read back, not timed again
    KC.choose_kernels(model, refresh=True)                                   # asked to: timed again
    assert timed == [3, 3]
    monkeypatch.setattr(torch, "get_num_threads", lambda: 97)                # another thread count: timed again
    KC.choose_kernels(model)
    assert timed == [3, 3, 3]
    assert KC.choose_kernels(torch.nn.Sequential()) is None                  # nothing on the engine's kernels
    for path in tmp_path.glob("kernels_*.json"):                             # a file missing timings: timed again
        data = json.loads(path.read_text())
        data["ms"].pop(next(iter(data["ms"])))
        path.write_text(json.dumps(data))
    KC.choose_kernels(model)
    assert timed == [3, 3, 3, 3]


def test_time_kernels_times_every_shape_row_count_and_kernel():
    model = torch.nn.Sequential(torch.nn.Linear(16, 24), torch.nn.Linear(24, 16))
    FR.use_few_row_linear(model)
    ms = KC.time_kernels(FR.fp32_layers(model), reps=1)
    assert set(ms) == {(s, r, k) for s in ("24x16", "16x24") for r in FR.PROBE_ROWS for k in KC.timed_kernels()}
    assert all(0 < v < float("inf") for v in ms.values())


@needs_mkl
def test_mkl_packed_gemm_gives_f_linears_numbers_at_every_row_count_from_one_pack():
    torch.manual_seed(0)
    layer = torch.nn.Linear(96, 160)
    FR.use_few_row_linear(layer)
    FR.apply_choice(layer, {"160x96": {"mkl": list(FR.PROBE_ROWS)}})
    with torch.inference_mode():
        for shape in ((96,), (1, 1, 96), (3, 96), (1, 5, 96), (2, 8, 96), (40, 96), (1, 200, 96), (1000, 96),
                      (0, 96)):
            x = torch.randn(*shape)
            torch.testing.assert_close(layer(x), F.linear(x, layer.weight, layer.bias), rtol=1e-5, atol=1e-5)
        pack = layer._few_row_pack
        assert pack.mkl is not None and pack.packed is None          # only MKL's copy was made
        first = pack.mkl
        layer(torch.randn(4, 96))
        assert pack.mkl is first                                     # one pack serves every row count
    with torch.no_grad():
        layer.weight.mul_(2)                                         # changed in place: packed again
    with torch.inference_mode():
        x = torch.randn(4, 96)
        torch.testing.assert_close(layer(x), F.linear(x, layer.weight, layer.bias), rtol=1e-5, atol=1e-5)
    assert pack.mkl is not first


@needs_mkl
@pytest.mark.parametrize("fault", ["off by 1 %", "NaN", "wrong only for a prefill"])
def test_a_kernel_that_gets_a_shape_wrong_is_never_chosen_for_it(tmp_path, monkeypatch, fault):
    monkeypatch.setenv("OPTTREE_COSTS", str(tmp_path))
    model = torch.nn.Sequential(torch.nn.Linear(16, 24), torch.nn.Linear(24, 16))
    FR.use_few_row_linear(model)
    real_run, real_time = FR.run_kernel, KC.time_kernels

    def broken_mkl(kernel, x, weight, bias, pack):   # MKL wrong on the 24x16 layer
        out = real_run(kernel, x, weight, bias, pack)
        if kernel != MKL or weight.shape[0] != 24:
            return out
        if fault == "NaN":
            return out.index_fill(-1, torch.tensor([0]), float("nan"))
        rows = x.numel() // x.shape[-1]
        return out * 1.01 if fault == "off by 1 %" or rows > FR.PROBE_ROWS[-1] else out

    def mkl_fastest(layers, reps=4):                  # real checks; MKL's times made the best where it is right
        return {k: (0.0 if k[2] == "mkl" and v < float("inf") else v) for k, v in real_time(layers, 1).items()}

    monkeypatch.setattr(KC, "run_kernel", broken_mkl)
    monkeypatch.setattr(KC, "time_kernels", mkl_fastest)
    choice = KC.choose_kernels(model, refresh=True)
    assert choice["16x24"] == {"mkl": list(FR.PROBE_ROWS)} and "mkl" not in choice.get("24x16", {})
    data = json.loads(next(tmp_path.glob("kernels_*.json")).read_text())
    assert data["ms"]["24x16 1 mkl"] is None and data["ms"]["16x24 1 mkl"] == 0.0   # written as null
    monkeypatch.setattr(KC, "time_kernels", None)       # read back from the cache: still never chosen
    assert KC.choose_kernels(model) == choice


def test_each_kernel_must_beat_the_pick_before_it_by_the_margin():
    ms = {("a", r, k): {"onednn": 1.0, "plain": 0.5, "mkl": 0.49}[k] for r in FR.PROBE_ROWS for k in FR.KERNELS}
    assert KC.choice_from(ms, ["a"]) == {"a": {"plain": list(FR.PROBE_ROWS)}}      # MKL within 3 % of F.linear
    ms[("a", 4, "mkl")] = 0.4
    ms[("a", 6, "onednn")] = float("inf")                                          # oneDNN wrong at 6
    assert KC.choice_from(ms, ["a"]) == {"a": {"mkl": [4], "plain": [r for r in FR.PROBE_ROWS if r != 4]}}
    assert KC.choice_from(ms, ["a"], ("plain", "onednn")) == {"a": {"plain": list(FR.PROBE_ROWS)}}


@needs_mkl
def test_choosing_keeps_only_the_copies_the_choice_uses(tmp_path, monkeypatch):
    monkeypatch.setenv("OPTTREE_COSTS", str(tmp_path))
    model = torch.nn.Sequential(torch.nn.Linear(16, 24), torch.nn.Linear(24, 16))
    FR.use_few_row_linear(model)
    real = KC.time_kernels

    def mkl_wins_on_the_first(layers, reps=4):     # times for real (packing every copy), then says MKL won
        ms = real(layers, reps=1)
        return {(s, r, k): (0.0 if s == "24x16" and k == "mkl" else v) for (s, r, k), v in ms.items()}

    monkeypatch.setattr(KC, "time_kernels", mkl_wins_on_the_first)
    KC.choose_kernels(model, refresh=True)
    first, second = model[0]._few_row_pack, model[1]._few_row_pack
    assert first.mkl is not None and first.packed is None
    assert (second.mkl is None) == ("mkl" not in (FR.choice_of(model).get("16x24") or {}))


def _plain_wins_at(monkeypatch, wins: dict) -> None:
    """Timings in which F.linear wins at exactly `wins["rows"]` rows, for every shape (read at each call)."""
    monkeypatch.setattr(KC, "time_kernels", lambda layers, reps=4: {
        (FR.layer_shape(m), r, k): (1.0 if (k == "plain") == (r == wins["rows"]) else 2.0)
        for m in layers for r in FR.PROBE_ROWS for k in KC.timed_kernels()})


def test_the_loaders_choose_for_the_target_and_drafts_follow_it(tmp_path, monkeypatch):

    monkeypatch.setenv("OPTTREE_COSTS", str(tmp_path))
    _plain_wins_at(monkeypatch, {"rows": 1})
    pair = tiny_pair("none")
    prepare(pair.target, torch.device("cpu"))
    chosen = FR.choice_of(pair.target)
    assert chosen and all(by == {"plain": [1]} for by in chosen.values())
    head = load_feature_head(RANDOM_HEAD, pair.target)
    shared = {FR.layer_shape(m) for m in FR.fp32_layers(head)} & set(chosen)
    assert shared and FR.choice_of(head) == {s: {"plain": [1]} for s in shared}
    pair.drafter_kind = "none"
    key = cost.cache_key(pair)
    assert key["kernels"] == chosen
    FR.apply_choice(pair.target, {})
    assert cost.cache_key(pair)["kernels"] == {} and cost.cache_key(pair) != key   # measured again
    FR.use_plain_linear(head)
    assert FR.choice_of(head) is None            # a draft off the few-row kernel reports no choice


def test_a_draft_back_from_int8_takes_its_targets_choice_again(tmp_path, monkeypatch):
    if not FR._have_int8():
        pytest.skip("this PyTorch build has no dynamic int8 linear")

    monkeypatch.setenv("OPTTREE_COSTS", str(tmp_path))
    _plain_wins_at(monkeypatch, {"rows": 1})
    pair = tiny_pair("none")
    prepare(pair.target, torch.device("cpu"))
    monkeypatch.setenv("OPTTREE_DRAFT_INT8", "1")
    head = load_feature_head(RANDOM_HEAD, pair.target)
    on_int8 = FR.choice_of(head)
    monkeypatch.setenv("OPTTREE_DRAFT_INT8", "0")
    FR.use_few_row_linear(head, draft=True)          # back on fp32: new holders
    shared = {FR.layer_shape(m) for m in FR.fp32_layers(head)} & set(FR.choice_of(pair.target))
    assert shared and FR.choice_of(head) == {s: {"plain": [1]} for s in shared} != on_int8
    assert all(m._few_row_pack.table[1] == PLAIN for m in FR.fp32_layers(head) if FR.layer_shape(m) in shared)


def test_a_refresh_chooses_again_and_the_draft_and_cost_key_follow(tmp_path, monkeypatch):

    monkeypatch.setenv("OPTTREE_COSTS", str(tmp_path))
    wins = {"rows": 1}
    _plain_wins_at(monkeypatch, wins)
    pair = tiny_pair("none")
    prepare(pair.target, torch.device("cpu"))
    pair.drafter_kind, pair.draft_name = "eagle", "random-head"
    pair.draft_model = load_feature_head(RANDOM_HEAD, pair.target)
    wins["rows"] = 2
    curve = cost.load_or_measure(pair, refresh=True)
    assert all(by == {"plain": [2]} for by in FR.choice_of(pair.target).values())
    assert FR.choice_of(pair.draft_model)
    assert all(by == {"plain": [2]} for by in FR.choice_of(pair.draft_model).values())
    assert curve["key"]["kernels"] == FR.choice_of(pair.target)
    assert curve["key"]["draft_kernels"] == FR.choice_of(pair.draft_model)


def test_the_verify_cost_curve_times_the_chosen_kernels_beside_each_kernel_alone():

    pair = tiny_pair("none")
    FR.use_few_row_linear(pair.target)
    FR.apply_choice(pair.target, {FR.layer_shape(m): {"plain": [1]} for m in FR.fp32_layers(pair.target)})
    chosen = FR.choice_of(pair.target)
    curve = verify_cost_curve(pair, (1, 3), reps=1, warmup=0)
    assert curve["meta"]["kernels"] == chosen
    alone = ["plain", "onednn_only"] + ["mkl_only"] * FR.have_mkl()
    assert all(p[f"{k}_median_ms"] > 0 for p in curve["points"] for k in alone)
    assert "mkl_only_median_ms" in curve["points"][0] or not FR.have_mkl()
    assert all(m._few_row_pack.mkl is None for m in FR.fp32_layers(pair.target))   # timing's copies dropped
    assert FR.choice_of(pair.target) == chosen        # left as it was
    FR.use_plain_linear(pair.target)                  # off the engine's kernels: nothing else to time
    assert "onednn_only_median_ms" not in verify_cost_curve(pair, (1,), reps=1, warmup=0)["points"][0]


@pytest.mark.parametrize("drafter", ["classic", "eagle"])
def test_decoding_with_a_mixed_kernel_choice_stays_exact(drafter):
    """AR's one-row forwards on F.linear, trees of a few rows on MKL's packed GEMM, larger ones on oneDNN
    (as on an AVX-512 Xeon): the output is still the target's own greedy output."""
    pair = tiny_pair(drafter, eos=9)
    mixed = {"plain": [1, 2], **({"mkl": [3, 4, 64]} if FR.have_mkl() else {})}   # 64: prefills too
    for model in (pair.target, pair.draft_model):
        FR.use_few_row_linear(model)
        FR.apply_choice(model, {FR.layer_shape(m): mixed for m in FR.fp32_layers(model)})
    for nodes in (1, 4):
        for prompt in PROMPTS:
            ref = reference(pair.target, prompt, 24)
            cfg = DecodeConfig(method="opt-tree", nodes=nodes, threshold=0.0, max_depth=5, max_new_tokens=24)
            assert run(pair, "", cfg, prompt_ids=prompt)["output_ids"] == ref


def test_the_switch_leaves_mkl_out_of_the_choice(monkeypatch):
    model = torch.nn.Sequential(torch.nn.Linear(16, 24))
    FR.use_few_row_linear(model)
    monkeypatch.setenv("OPTTREE_NO_MKL_PACK", "1")
    assert KC.timed_kernels() == ("plain", "onednn")
    off = KC.choice_key(model)
    monkeypatch.setenv("OPTTREE_NO_MKL_PACK", "0")
    assert ("mkl" in KC.timed_kernels()) == FR.have_mkl()
    assert (KC.choice_key(model) != off) == FR.have_mkl()     # chosen and cached apart
    assert set(KC.time_kernels(FR.fp32_layers(model), reps=1)) >= {("24x16", 1, k) for k in KC.timed_kernels()}
