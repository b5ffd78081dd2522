"""The Theory tab's views, built from a hand-made trace (no model): p and q bars, every scheme's rate
against k with the optima marked and this tree's own node, the generated reading, and the handlers."""

import copy

import pytest

from opttree.theory.rows import row_distributions, row_scheme_table, split_rest
from opttree.theory.table import SCHEMES, scheme_table
from opttree.trace_file import validate_trace
from ui import theory as tab
from viz import theory as views

ROOT_ROW = {"node": -1, "ids": [10, 11, 12, 13], "texts": [" the", " a", " an", "*x*"],
            "p": [0.6, 0.2, 0.05, 0.1], "q": [0.5, 0.3, 0.1, 0.05]}
NODE_ROW = {"node": 0, "ids": [30, 20], "texts": [" cat", " dog"], "p": [0.7, 0.1], "q": [0.2, 0.6]}


def synthetic_trace(rows=True) -> dict:
    step = {"step": 0, "tokens": [10, 11, 12, 20], "texts": [" the", " a", " an", " dog"], "parents": [-1, -1, -1, 0],
            "depth": [1, 1, 1, 2], "q": [0.5, 0.3, 0.1, 0.6], "p_hat": [0.5, 0.3, 0.1, 0.3], "rank": [0, 1, 2, 0],
            "accepted": [0], "accept_length": 1, "bonus_token": 30, "bonus_text": " cat", "rejected": 3,
            "committed": [10, 30], "expected_accept": 1.2, "ea_by_depth": [0.0, 0.9, 1.2]}
    if rows:
        step.update(p_target=[0.6, 0.2, 0.05, 0.1], topk_rows=[copy.deepcopy(ROOT_ROW), copy.deepcopy(NODE_ROW)])
    meta = {"method": "opt-tree", "tree_temperature": 1.0, "temperature": 0.7,
            "target_distribution": "the target's sampling distribution (temperature 0.7, top-k off, top-p 1)"}
    return {"version": 1, "meta": meta, "prompt": "", "prompt_ids": [1, 2], "output_ids": [10, 30],
            "output_text": " the cat", "steps": [step, copy.deepcopy(step)],
            "summary": {"new_tokens": 4, "steps": 2, "tau": 2.0, "tokens_per_s": 1.0}}


def traces_by_name(fig) -> dict:
    return {t["name"]: t for t in fig.to_dict()["data"]}


def test_synthetic_trace_is_valid():
    validate_trace(synthetic_trace())


def test_node_menu_lists_the_recorded_rows():
    assert views.node_choices(synthetic_trace(), 1) == [("root (the last committed token)", "1:-1"),
                                                        ("node 0: ␣the (depth 1, accepted)", "1:0")]
    assert views.parse_choice("1:0") == (1, 0) and views.parse_choice("junk") is None


def test_root_view_bars_rates_and_reading():
    dist, rates, text = views.step_view(synthetic_trace(), 0, -1)
    bars = traces_by_name(dist)
    assert bars["target p"]["x"] == ["␣the", "␣a", "*x*", "␣an", views.REST_LABEL]
    assert bars["target p"]["y"] == pytest.approx([0.6, 0.2, 0.1, 0.05, 0.05])
    assert bars["draft q"]["y"] == pytest.approx([0.5, 0.3, 0.05, 0.1, 0.05])
    assert sorted(bars["child in this tree"]["x"]) == sorted(["␣the", "␣a", "␣an"])

    lines = traces_by_name(rates)
    table = {name: lines[views.SCHEME_LABELS[name]]["y"] for name in SCHEMES}
    assert all(lines[views.SCHEME_LABELS[name]]["x"] == list(range(1, 9)) for name in SCHEMES)
    for bound in views.BOUNDS:
        assert lines[views.SCHEME_LABELS[bound]]["line"]["dash"] == "dash"
    for k in range(8):
        assert table["rrs_iid"][k] <= table["optimal_iid"][k] + 1e-9
        assert table["kseq"][k] <= table["optimal_iid"][k] + 1e-9
        assert table["rrs_wor"][k] <= table["optimal_wor"][k] + 1e-3
        assert table["optimal_iid"][k] <= table["optimal_wor"][k] + 1e-9
    star = lines["this tree at this node"]
    assert star["x"] == [3] and star["y"] == pytest.approx([0.85])          # three children: 0.6 + 0.2 + 0.05
    assert table["topk_set"][2] == pytest.approx(0.85)                      # they are q's top 3

    assert "0.60** on ␣the" in text and "3** children" in text and "0.85" in text
    assert "so it was accepted" in text
    assert "With **3 drafts**" in text and f"{table['optimal_iid'][2]:.2f}" in text
    assert "temperature 0.7" in text and "p 0.05, q 0.05" in text


def test_node_view_reports_the_bonus_and_escapes_tokens():
    trace = synthetic_trace()
    dist, rates, text = views.step_view(trace, 0, 0)
    assert "␣cat**: not among the children, so it became the bonus token" in text
    assert "this tree at this node" in traces_by_name(rates)                 # one child: k = 1
    assert traces_by_name(rates)["this tree at this node"]["y"] == pytest.approx([0.1])
    trace["steps"][0]["topk_rows"][0]["texts"][3] = "<b>*x*</b>"
    _, _, text = views.step_view(trace, 0, -1)
    assert "<b>" not in text
    dist, _, _ = views.step_view(trace, 0, -1)
    assert "&lt;b&gt;*x*&lt;/b&gt;" in traces_by_name(dist)["target p"]["x"]


def test_the_reading_says_what_the_childrens_mass_means_greedy_and_sampled():
    """Failed before: a greedy run's reading called the mass "the chance its own token is one of them", where
    the target takes its most likely token (p is the softmax the sampled run would draw from)."""
    trace = synthetic_trace()
    sampled = views.step_view(trace, 0, -1)[2]
    assert "(the star on the chart): the chance its own token is one of them." in sampled
    trace["meta"]["temperature"] = 0.0
    text = views.step_view(trace, 0, -1)[2]
    assert "the chance its own token" not in text
    # The star's note follows the mass it marks, and the greedy aside is a sentence of its own, not a second
    # parenthesis after the first ("... (this run is greedy: ...) (the star on the chart)").
    assert ("(the star on the chart): the chance a sampled run's token would be one of them. This run is greedy: "
            "the target takes its most likely token.") in text
    assert ") (" not in text


def test_missing_rows_and_no_run_give_a_message():
    dist, rates, text = views.step_view(synthetic_trace(rows=False), 0, -1)
    assert "no recorded distributions" in text and not dist.to_dict()["data"] and not rates.to_dict()["data"]
    assert "No Explore run yet" in views.step_view(None, 0, -1)[2]
    # An unknown node falls back to a recorded one.
    assert "root" in views.step_view(synthetic_trace(), 0, 99)[2]


def test_toy_preset_and_bad_toy_input():
    dist, rates, text = views.toy_view(40, 3.0, 3.0, 0.6, 1)
    x = traces_by_name(dist)["target p"]["x"]
    assert len(x) == views.SHOWN + 1 and x[-1].startswith("(other 24")
    assert sum(traces_by_name(dist)["target p"]["y"]) == pytest.approx(1.0)
    assert len(rates.to_dict()["data"]) == len(SCHEMES) and "Toy p and q" in text
    for bad in [(1, 3, 3, 0.6, 0), (10**6, 3, 3, 0.6, 0), ("x", 3, 3, 0.6, 0), (16, float("nan"), 3, 0.6, 0)]:
        d, r, message = views.toy_view(*bad)
        assert message.startswith("⚠️") and not d.to_dict()["data"]
    _, rates, text = views.preset_view()
    lines = traces_by_name(rates)
    iid, wor = lines[views.SCHEME_LABELS["optimal_iid"]]["y"][1], lines[views.SCHEME_LABELS["optimal_wor"]]["y"][1]
    assert wor - iid > 0.3 and "without replacement clearly helps" in text



def test_the_gap_without_replacement_is_not_claimed_when_the_rest_bucket_holds_much_mass():
    """A trace row's rest bucket counts as one token: i.i.d. draws repeat it where real tokens would not,
    so a large bucket's gap between the two optima is flagged, not read as a gain."""
    table = views.rates(views.preset_dists())                 # a real gap: +0.3 and more at k = 2
    assert "clearly helps" in views.reading(table, 2) and "clearly helps" in views.reading(table, 2, 0.05)
    flagged = views.reading(table, 2, 0.6)
    assert "clearly helps" not in flagged and "the bucket of all other tokens holds 0.60" in flagged
    # nor are the sampled figures read as the real distributions' own: the optima are upper bounds there
    assert "the best any verifier could do is at most **" in flagged and "Every figure but p(set) is rough" in flagged
    assert "at most" not in views.reading(table, 2, 0.05) and "rough" not in views.reading(table, 2, 0.05)
    trace = synthetic_trace()
    row = trace["steps"][0]["topk_rows"][0]
    scale = 0.3 / sum(row["p"])                             # the recorded tokens keep 0.3 of p: 0.7 in the bucket
    row["p"] = [x * scale for x in row["p"]]
    *_, text = views.step_view(trace, 0, row["node"])
    assert "clearly helps" not in text

def test_tab_handlers():
    trace = synthetic_trace()
    menu, dist, rates, text = tab.open_step(trace, 2)
    assert [c[1] for c in menu.choices] == ["1:-1", "1:0"] and menu.value == "1:-1"
    assert "Step 2, root" in text
    assert "Step 1, node 0" in tab.show_node(trace, "0:0")[2]
    assert "Step 1, root" in tab.show_node(trace, "nonsense")[2]
    menu, _, _, text = tab.open_step(None, 1)
    assert menu.choices == [] and "Toy p and q" in text
    # With no run the sliders' own values are drawn (not the defaults), and the button says there is no run.
    assert tab.open_step(None, 1, 40, 3, 3, 2, 0)[3] == views.toy_view(40, 3, 3, 2, 0)[2] != text
    assert "no Explore run yet" in tab.use_step(None, 1, 40, 3, 3, 2, 0)[3]
    assert "no Explore run" not in tab.use_step(trace, 2, 40, 3, 3, 2, 0)[3]
    assert "⚠️" in tab.show_toy(16, 3, 3, 99, 0)[2]


def test_recorded_row_rates_never_fix_the_rest_bucket():
    row = {"node": -1, "ids": [1, 2], "texts": ["a", "b"], "p": [0.5, 0.2], "q": [0.1, 0.05]}
    p, q, rest_p, rest_q = row_distributions(row)
    assert list(p) == pytest.approx([0.5, 0.2, 0.3]) and list(q) == pytest.approx([0.1, 0.05, 0.85])
    sp, sq = split_rest(p, q)
    assert sp.sum() == pytest.approx(1) and sq.sum() == pytest.approx(1) and sq[2:].max() < 0.05
    table = row_scheme_table(row, [1, 2, 3])
    merged = scheme_table(p, q, [1, 2, 3])
    # The draft's bucket holds q = 0.85, but a fixed set takes recorded tokens only: p(set) is exact.
    assert merged["topk_set"][0] == pytest.approx(0.3)
    assert table["topk_set"][:2] == pytest.approx([0.5, 0.7])
    # Greedy drafts fix token "a"; the last draft is sampled from the rest, where the bucket stays one term.
    assert table["greedy_draft"][1] == pytest.approx(0.5 + 0.05 / 0.9 + 0.3)
    for name in ("optimal_iid", "optimal_wor", "rrs_iid", "rrs_wor", "kseq"):
        assert table[name] == pytest.approx(merged[name])


def test_every_toy_slider_redraws_when_dragged_or_typed():
    """A typed number fires no `release`: each slider redraws on `input`, the latest value winning."""
    from opttree.serve.allow_list import load_registry
    from opttree.serve.service import RunService
    from ui.app import build_app

    demo = build_app(RunService(registry=load_registry()))
    toy = [f for f in demo.fns.values() if f.name == "show_toy"]
    sliders = {f.targets[0][0] for f in toy if [t[1] for t in f.targets] == ["input"]}
    assert len(sliders) == len(views.TOY_DEFAULTS) and all(f.trigger_mode == "always_last" for f in toy
                                                          if f.targets[0][1] == "input")
