"""The theory table (schemes as in Hu et al.'s Table 1) on tiny random models: rates in [0, 1], each
verifier at or below its optimum, the markdown and the report section, and bad input refused."""

import json

import pytest
import torch
from tiny import tiny_pair

from opttree.bench.prompts import parse_prompts
from opttree.bench.theory_table import SCHEME_NAMES, markdown_table, run_theory_table, table_from_traces
from opttree.config import DecodeConfig
from opttree.errors import BadInput
from opttree.theory.table import SCHEMES

PROMPTS = ('{"question_id": 1, "category": "math", "turns": ["t1 t2 t3"]}\n'
           '{"question_id": 2, "category": "writing", "turns": ["t5 t6 t7 t8"]}\n')


@pytest.fixture(scope="module")
def result():
    torch.set_num_threads(1)
    # An independent draft, sharp enough that the top 8 of each side hold most of the mass.
    pair = tiny_pair("classic", scale=8.0, vocab=16)
    cfg = DecodeConfig(method="ar", nodes=6, max_depth=3, max_new_tokens=8, temperature=0.7, seed=1)
    return run_theory_table(pair, parse_prompts(PROMPTS), cfg, chat=False, log=lambda m: None)


def test_rates_are_probabilities_ordered_as_theory_guarantees(result):
    assert result["ks"] == [1, 2, 3, 4]
    assert result["rows"] == sum(r["rows"] for r in result["runs"]) > 10
    mean = {name: result["mean"][name] for name in SCHEMES}
    for name in SCHEMES:
        assert len(mean[name]) == 4 and all(0.0 <= v <= 1.0 for v in mean[name])
    for i in range(4):
        assert mean["rrs_iid"][i] <= mean["optimal_iid"][i] + 1e-4
        assert mean["kseq"][i] <= mean["optimal_iid"][i] + 1e-4
        assert mean["rrs_wor"][i] <= mean["optimal_wor"][i] + 1e-4
        assert mean["optimal_iid"][i] <= mean["optimal_wor"][i] + 1e-4
    # One draft: every sampled scheme is single-draft speculative sampling, 1 − TV(p, q).
    first = {mean[name][0] for name in ("optimal_iid", "optimal_wor", "greedy_draft", "rrs_iid", "rrs_wor", "kseq")}
    assert max(first) - min(first) <= 1e-4
    assert all(mean["optimal_wor"][i] <= mean["optimal_wor"][i + 1] + 1e-4 for i in range(3))
    assert mean["optimal_iid"][3] < 1.0                           # a real gap to close
    assert 0.0 <= result["mean_rest_p"] <= 1.0 and 0.0 <= result["mean_rest_q"] <= 1.0
    kids = result["tree_children"]
    assert kids["rows"] > 0 and 0.0 < kids["mean_target_mass"] <= 1.0
    meta = result["meta"]
    assert meta["config"]["method"] == "opt-tree" and meta["config"]["temperature"] == 0.7
    assert "temperature 0.7" in meta["target_distribution"]
    json.dumps(result)


def test_markdown_table_and_report_section(result, tmp_path):
    from opttree.bench.report import write_report
    from opttree.bench.theory_table import theory_markdown

    table = markdown_table(result)
    assert table.splitlines()[0] == "| scheme | k = 1 | k = 2 | k = 3 | k = 4 |"
    assert all(SCHEME_NAMES[name] in table for name in SCHEMES)
    assert f"{result['mean']['kseq'][2]:.3f}" in table
    page = theory_markdown(result, "opttree theory-table --limit 2")
    assert "opttree theory-table --limit 2" in page and "temperature 0.7" in page and table in page
    text = write_report(None, None, tmp_path / "README.md", theory=result)
    assert "## Optimal multi-draft acceptance" in text and table in text


def test_table_needs_recorded_rows_and_sampling():
    with pytest.raises(BadInput, match="no recorded rows"):
        table_from_traces([{"steps": [{"parents": [], "tokens": []}]}])
    with pytest.raises(BadInput, match="temperature"):
        run_theory_table(None, [], DecodeConfig(method="opt-tree"), log=lambda m: None)


def test_cli_rejects_bad_arguments_before_loading(tmp_path, capsys):
    from opttree.cli import main

    qf = tmp_path / "q.jsonl"
    qf.write_text(PROMPTS)
    assert main(["theory-table", "--prompts", str(qf), "--ks", "1,9"]) == 2
    assert "--ks" in capsys.readouterr().err
    assert main(["theory-table", "--prompts", str(qf), "--temperature", "0"]) == 2
    assert "temperature > 0" in capsys.readouterr().err


def test_only_the_timed_commands_offer_a_warm_up():
    """The theory table times nothing (it reads acceptance off recorded nodes), so `--warmup` would be a flag
    that does nothing: its parser refuses it, while bench and sweep, which time runs, keep it."""
    from opttree.cli import build_parser

    parser = build_parser()
    assert parser.parse_args(["bench", "--warmup", "2"]).warmup == 2
    assert parser.parse_args(["sweep", "--warmup", "2"]).warmup == 2
    assert not hasattr(parser.parse_args(["theory-table"]), "warmup")
    with pytest.raises(SystemExit):
        parser.parse_args(["theory-table", "--warmup", "2"])
