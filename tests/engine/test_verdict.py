"""The comparison verdict says only what the spread over prompts supports."""

from __future__ import annotations

import pytest

from opttree.bench.verdict import disturbed, disturbed_warning, mean_se, per_prompt, spread, verdict


def rows_for(taus: dict[str, list[float]], speeds: dict[str, list[float]]) -> list[dict]:
    """Bench rows: AR at 10 tokens/s on every prompt, each method's τ and speedup per prompt."""
    n = len(next(iter(taus.values())))
    rows = [{"prompt_id": f"p{i}", "method": "ar", "tau": 1.0, "tokens_per_s": 10.0} for i in range(n)]
    for m, ts in taus.items():
        rows += [{"prompt_id": f"p{i}", "method": m, "tau": t, "tokens_per_s": 10.0 * speeds[m][i]}
                 for i, t in enumerate(ts)]
    return rows


def result(taus, speeds, nodes=0):
    return {"runs": rows_for(taus, speeds), "meta": {"methods": ["ar", *taus], "config": {"nodes": nodes}}}


def test_mean_and_standard_error():
    assert mean_se([]) == (None, None) and mean_se([2.0]) == (2.0, None)
    mean, se = mean_se([1.0, 2.0, 3.0])
    assert mean == 2.0 and se == pytest.approx(1 / 3 ** 0.5)


def test_spread_reports_per_prompt_means_and_their_error():
    s = spread(rows_for({"opt-tree@25": [2.0, 3.0]}, {"opt-tree@25": [1.0, 1.5]}))
    assert s["opt-tree@25"]["tau"] == 2.5 and s["opt-tree@25"]["tau_se"] == pytest.approx(0.5)
    assert s["opt-tree@25"]["speedup"] == 1.25 and s["opt-tree@25"]["prompts"] == 2
    assert s["ar"]["speedup"] == 1.0


def test_a_clear_tau_lead_at_a_fixed_budget_is_stated_with_its_spread():
    taus = {"opt-tree@25": [3.0, 3.3, 2.8, 3.1, 3.2], "eagle-static@25": [2.7, 3.0, 2.6, 2.8, 2.9],
            "binary@25": [2.4, 2.6, 2.3, 2.5, 2.5]}
    speeds = {m: [1.0] * 5 for m in taus}
    text = verdict(result(taus, speeds))
    assert text.startswith("At n = 25, OPT-Tree accepts 10% more tokens per step than the best static tree "
                           "(eagle-static)") and "over 5 prompts" in text and "±" in text


def test_a_difference_inside_the_noise_is_never_a_ranking():
    taus = {"opt-tree@25": [3.0, 2.0, 3.4, 2.2], "eagle-static@25": [2.2, 3.1, 2.3, 3.2]}
    text = verdict(result(taus, {m: [1.0] * 4 for m in taus}))
    assert "within noise" in text and "more tokens" not in text
    one = verdict(result({"opt-tree@25": [3.0], "binary@25": [2.0]}, {"opt-tree@25": [1.0], "binary@25": [1.0]}))
    assert "within noise" in one                                    # one prompt: no spread, no ranking


def test_speed_at_the_auto_budget_is_judged_apart_from_tau():
    taus = {"opt-tree": [2.0, 2.1, 1.9, 2.0], "binary": [1.9, 2.0, 1.8, 1.9], "eagle-static": [1.9, 2.0, 1.8, 1.9]}
    tied = {"opt-tree": [1.25, 1.20, 1.30, 1.22], "binary": [1.24, 1.26, 1.21, 1.25],
            "eagle-static": [1.2, 1.2, 1.2, 1.2]}
    text = verdict(result(taus, tied))
    assert "within noise of each other in speed" in text and "n = " not in text
    fast = {**tied, "opt-tree": [1.5, 1.45, 1.55, 1.5]}
    assert "OPT-Tree is the fastest tree (1.50× vs binary's 1.24×" in verdict(result(taus, fast))


def test_the_bench_report_prints_the_verdict_of_its_own_runs(tmp_path):
    from tiny import tiny_pair

    from opttree.bench.harness import run_bench
    from opttree.bench.prompts import parse_prompts
    from opttree.bench.report import bench_section
    from opttree.config import DecodeConfig

    prompts = parse_prompts('{"prompt": "t1 t2 t3"}\n{"prompt": "t4 t5"}\n{"prompt": "t6 t7 t8 t9"}\n')
    pair = tiny_pair("classic", draft_is_target=True)
    r = run_bench(pair, prompts, ["ar", "opt-tree@8", "binary@8"], DecodeConfig(max_new_tokens=8), warmup=1,
                  chat=False, log=lambda m: None)
    said = verdict(r)
    assert said.startswith("At n = 8, OPT-Tree") and "over 3 prompts" in said
    assert any(line.startswith("**Verdict**") and said in line for line in bench_section(r))


def test_several_budgets_make_one_sentence_of_the_tau_lesson():
    """Compare measures τ at several fixed budgets: one sentence groups them (more, fewer, within noise),
    each with its paired difference, and the speed lesson stays a sentence of its own."""
    taus = {"opt-tree@4": [2.0, 2.1, 1.9, 2.0], "binary@4": [2.3, 2.4, 2.2, 2.3],
            "opt-tree@10": [2.5, 2.0, 2.9, 2.1], "binary@10": [2.2, 2.7, 2.3, 2.6],
            "opt-tree@25": [3.0, 3.3, 2.8, 3.1], "eagle-static@25": [2.5, 2.7, 2.4, 2.6],
            "opt-tree": [2.6, 2.7, 2.5, 2.6], "binary": [2.4, 2.5, 2.3, 2.4]}
    speeds = {m: [1.2, 1.3, 1.1, 1.2] for m in taus}
    text = verdict(result(taus, speeds))
    first, second = text.split(". At this machine's budget ")
    assert first.startswith("At the same node budget OPT-Tree accepts more tokens per step than the best static "
                            "tree at n = 25 (+") and "vs eagle-static" in first
    assert "accepts fewer tokens per step than the best static tree at n = 4 (-13%" in first
    assert "is within noise of it at n = 10" in first and first.endswith("over 4 prompts)")
    assert second.startswith("the shapes are within noise of each other in speed")


def test_pair_table_pairs_two_methods_per_prompt_overall_and_by_category():
    from opttree.bench.verdict import pair_table

    res = result({"a": [2.0, 3.0, 2.5, 4.0], "b": [2.0, 2.0, 2.5, 3.0]},
                 {"a": [1.2, 1.5, 1.0, 2.0], "b": [1.0, 1.0, 1.0, 1.6]})
    for r in res["runs"]:
        r["category"] = "x" if r["prompt_id"] in ("p0", "p1") else "y"
    table = {r["group"]: r for r in pair_table(res, "a", "b")}
    assert set(table) == {"all", "x", "y"} and table["all"]["prompts"] == 4
    assert table["all"]["tau"] == pytest.approx(0.5) and table["x"]["tau"] == pytest.approx(0.5)
    assert table["all"]["speed"] == pytest.approx((0.2 + 0.5 + 0.0 + 0.25) / 4)     # ratio of speedups - 1
    assert (table["all"]["faster"], table["all"]["slower"]) == (3, 0)                # a tie is neither
    assert table["y"]["tau_se"] == pytest.approx(0.5) and table["y"]["speed"] == pytest.approx(0.125)
    assert [r["group"] for r in pair_table(res, "a", "b", by=None)] == ["all"]
    assert pair_table(res, "a", "c") == []


def test_pair_table_command_prints_the_table_and_refuses_missing_methods(tmp_path, capsys):
    import json

    from opttree.bench.verdict import main

    path = tmp_path / "bench.json"
    path.write_text(json.dumps(result({"a": [2.0, 3.0], "b": [1.5, 2.0]}, {"a": [1.2, 1.4], "b": [1.0, 1.0]})))
    main([str(path), "a", "b", "--by", ""])
    out = capsys.readouterr().out
    assert "| all | 2 | +0.750 ± 0.250 | +30.0 ± 10.0 | 2 / 0 |" in out
    with pytest.raises(SystemExit, match="no prompt ran both"):
        main([str(path), "a", "zzz"])


def test_pair_table_against_a_second_result_keeps_each_speedup_over_its_own_ar(tmp_path, capsys):
    """The same method at two commits: each run's speedup is over its own AR (here AR ran twice as fast
    in the second run, and so did the method: no change), τ pairs directly."""
    import json

    from opttree.bench.verdict import main, pair_table

    before = result({"m": [2.0, 3.0]}, {"m": [1.2, 1.5]})
    after = result({"m": [2.5, 3.0]}, {"m": [1.2, 1.8]})
    for r in after["runs"]:
        r["tokens_per_s"] *= 2
    table = pair_table(after, "m", "m", by=None, other=before)
    assert table[0]["tau"] == pytest.approx(0.25) and table[0]["speed"] == pytest.approx((0.0 + 0.2) / 2)
    assert (table[0]["faster"], table[0]["slower"]) == (1, 0)
    paths = [tmp_path / "after.json", tmp_path / "before.json"]
    for path, res in zip(paths, (after, before)):
        path.write_text(json.dumps(res))
    main([str(paths[0]), "m", "m", "--by", "", "--against", str(paths[1])])
    out = capsys.readouterr().out
    assert "m against m of " in out and "| all | 2 | +0.250 ± 0.250 | +10.0 ± 10.0 | 1 / 0 |" in out
    with pytest.raises(SystemExit, match="not a readable bench result"):
        main([str(paths[0]), "m", "m", "--against", str(tmp_path / "missing.json")])


def test_a_speedup_beyond_tau_is_called_disturbed_timing():
    """A step costs at least an AR step, so a run cannot beat AR by more than its τ: a run that did (AR's
    runs slowed by other work) makes the verdict say the timing was disturbed, and only then."""
    taus = {"opt-tree@10": [2.0, 2.1], "binary@10": [1.78, 1.9]}
    calm = {"opt-tree@10": [1.5, 1.6], "binary@10": [1.4, 1.5]}
    assert "disturbed" not in verdict(result(taus, calm))
    noisy = {**calm, "binary@10": [5.15, 1.5]}
    assert "Timing was disturbed: binary@10 ran 5.15× AR on a prompt at τ 1.78" in verdict(result(taus, noisy))
    # BEYOND_TAU's 10 % for jitter: 1.05 × τ is still calm, 1.2 × τ is not
    assert "disturbed" not in verdict(result(taus, {**calm, "binary@10": [1.87, 1.5]}))
    assert "binary@10 ran 2.14× AR on a prompt at τ 1.78" in verdict(result(taus, {**calm, "binary@10": [2.14, 1.5]}))


def test_the_disturbed_warning_reads_back_whole_from_a_verdicts_text():
    """tools/screenshots.py prints the warning it finds in the Compare tab's verdict before running Compare again.
    It cut the warning at its first full stop (failed before: ": binary@10 ran 5", the decimal point of 5.15×);
    `disturbed_warning` gives the whole warning, and nothing for a calm verdict."""
    taus = {"opt-tree@10": [2.0, 2.1], "binary@10": [1.78, 1.9]}
    calm = {"opt-tree@10": [1.5, 1.6], "binary@10": [1.4, 1.5]}
    said = verdict(result(taus, {**calm, "binary@10": [5.15, 1.5]}))
    assert disturbed_warning(said) == disturbed(per_prompt(result(taus, {**calm, "binary@10": [5.15, 1.5]})["runs"]))
    assert disturbed_warning(said).startswith("Timing was disturbed: binary@10 ran 5.15× AR on a prompt at τ 1.78")
    assert disturbed_warning(said).endswith("run it again.") and disturbed_warning(verdict(result(taus, calm))) == ""


def test_a_difference_is_called_only_beyond_two_standard_errors():
    """The rule the docs state (NOISE_SE): paired τ differences 1.7 SE from zero stay within noise, 2.8 SE
    are called; the other verdict tests sit far from the line on either side."""
    def said(diffs):
        taus = {"opt-tree@25": [2.0 * (1 + d) for d in diffs], "eagle-static@25": [2.0] * len(diffs)}
        return verdict(result(taus, {m: [1.0] * len(diffs) for m in taus}))

    assert said([0.10, 0.0, 0.10, 0.0]).startswith("At n = 25, OPT-Tree and the best static tree (eagle-static) "
                                                   "accept within noise of each other (+5% ± 3% τ")
    assert said([0.13, 0.03, 0.13, 0.03]).startswith("At n = 25, OPT-Tree accepts 8% more tokens per step "
                                                         "than the best static tree (eagle-static) (± 3%")
