"""The CLI: bad input gives a clear message and a non-zero exit; a real run writes a valid trace."""

import json
import os
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, event, given, settings
from settings_fuzz import all_settings
from tiny import strict_json, tiny_pair

import opttree.cli as cli
import opttree.engine.speculative as speculative
from opttree.cli import main
from opttree.drafters.registry import KINDS
from opttree.models.draft_assets import card_temperature
from opttree.trace_file import loads

BUNDLED_HEAD = KINDS["eagle"].bundled_path

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.parametrize("args,needle", [
    (["--prompt", "   "], "prompt is empty"),
    (["--prompt", "hi", "--nodes", "-1"], "--nodes must be between"),
    (["--prompt", "hi", "--threshold", "-0.1"], "--threshold must be between"),
    (["--prompt", "hi", "--max-depth", "0"], "--max-depth must be between"),
    (["--prompt", "hi", "--temperature", "nan"], "--temperature must be between"),
    (["--prompt", "hi", "--base-model-path", "no-such-org/no-such-model-xyz"], "could not load model"),
    (["--prompt", "hi", "--device", "tpu"], "unknown device"),
    (["--prompt", "hi", "--tree-temperature", "0"], "--tree-temperature must be between"),
    (["--prompt", "hi", "--tree-temperature", "warm"], "--tree-temperature must be a number"),
    (["--prompt", "hi", "--retrieval-corpus", "/no/such/corpus.txt"], "cannot read the retrieval corpus"),
    (["--prompt", "hi", "--retrieval", "maybe"], None),
])
def test_bad_input_clear_error(capsys, args, needle):
    """A bad value is named by its flag, as it was typed (--max-depth, not the setting's field max_depth)."""
    if needle is None:   # argparse's own choices check
        with pytest.raises(SystemExit) as exc:
            main(["generate", *args])
        assert exc.value.code == 2 and "invalid choice" in capsys.readouterr().err
        return
    assert main(["generate", *args]) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err


@pytest.mark.parametrize("flag, value, shown", [
    ("--tree-temperature", "9", "between 0.05 and 5, got 9."),
    ("--tree-temperature", "0.01", "between 0.05 and 5, got 0.01."),
    ("--temperature", "9", "between 0 and 2, got 9."),
    ("--top-p", "1.5", "between 0 and 1, got 1.5."),
    ("--tree-temperature", "warm", "a number, got 'warm'."),
])
def test_a_rejected_number_is_shown_as_a_number(capsys, flag, value, shown):
    """A number out of range is shown as the number typed, a text that is no number quoted (failed before:
    --tree-temperature's `got '9'`, `got '0.01'`, quoted like a text; --temperature's `got 9.0`)."""
    assert main(["generate", "--prompt", "hi", flag, value]) == 2
    assert capsys.readouterr().err == f"error: {flag} must be {shown}\n"


def test_a_model_path_that_is_a_file_or_is_not_there_is_named_plainly(tmp_path, monkeypatch, capsys):
    """A GGUF or a weights file given as the target, or a local folder that is not there, is refused with what
    to give instead (not transformers' "not a valid JSON file" or "Repo id must be ..."), before anything loads."""
    monkeypatch.chdir(tmp_path)
    gguf, weights = tmp_path / "Model.Q4_1.gguf", tmp_path / "model.safetensors"
    gguf.write_bytes(b"GGUF")
    weights.write_bytes(b"{}")
    for spec, needle in ((gguf, "OPTTREE_GGUF"), (weights, "is a file"), (tmp_path / "gone", "no such folder"),
                         ("./gone", "no such folder")):
        assert main(["generate", "--prompt", "hi", "--method", "ar", "--base-model-path", str(spec)]) == 2
        err = capsys.readouterr().err
        assert needle in err and "JSON" not in err and "Repo id" not in err and "Traceback" not in err, err


def test_drafter_flag_offers_the_training_free_drafters():
    from opttree.cli import build_parser

    args = build_parser().parse_args(["generate", "--prompt", "x", "--drafter", "recycling", "--retrieval", "on"])
    assert args.drafter == "recycling" and args.retrieval == "on"
    assert build_parser().parse_args(["generate", "--prompt", "x", "--drafter", "lookup"]).drafter == "lookup"


def test_generate_times_a_warm_run(monkeypatch, capsys):
    """`opttree generate` warms the loaded pair up before the run whose tokens/s it prints."""
    pair, order = tiny_pair("classic"), []
    real_run = speculative.run
    monkeypatch.setattr(cli, "load_from_args", lambda args, need_draft: pair)
    monkeypatch.setattr(speculative, "warm_up", lambda p: order.append(("warm", p)))
    monkeypatch.setattr(speculative, "run", lambda p, *a, **k: order.append(("run", p)) or real_run(p, *a, **k))
    assert main(["generate", "--prompt", "t1 t2 t3", "--nodes", "4", "--max-new-tokens", "4", "--no-chat"]) == 0
    assert order == [("warm", pair), ("run", pair)]
    assert "tok/s" in capsys.readouterr().err


def test_eval_times_warm_answers(tmp_path, monkeypatch):
    """`opttree eval` warms the loaded pair before the answers whose wall_time Spec-Bench reads."""
    import opttree.bench.answers as answers

    qf, order, pair = tmp_path / "q.jsonl", [], tiny_pair("classic")
    qf.write_text('{"prompt": "t2 t2"}\n')
    monkeypatch.setattr(answers, "load_from_args", lambda args, need_draft: pair)
    monkeypatch.setattr(answers, "warm_up", lambda p: order.append(("warm", p)))
    monkeypatch.setattr(answers, "run_eval", lambda p, qs, *a: order.append(("eval", p)) or len(qs))
    assert answers.main(["--question-file", str(qf), "--answer-file", str(tmp_path / "a.jsonl")]) == 0
    assert order == [("warm", pair), ("eval", pair)]


def test_ar_on_a_pair_loaded_without_a_draft_warms_up_and_runs(tmp_path, monkeypatch, capsys):
    """`--method ar` loads the target alone (need_draft False); the warm-up before the timed run must
    not ask that pair for a draft (it did: every `generate --method ar` and `eval --method ar` failed)."""
    import opttree.bench.answers as answers

    loads = []

    def load(args, need_draft):
        loads.append(need_draft)
        return tiny_pair("none")

    monkeypatch.setattr(cli, "load_from_args", load)
    monkeypatch.setattr(answers, "load_from_args", load)
    assert main(["generate", "--prompt", "t1 t2 t3", "--method", "ar", "--max-new-tokens", "4", "--no-chat"]) == 0
    assert "tok/s" in capsys.readouterr().err
    qf, af = tmp_path / "q.jsonl", tmp_path / "a.jsonl"
    qf.write_text('{"prompt": "t2 t2"}\n')
    assert answers.main(["--question-file", str(qf), "--answer-file", str(af), "--method", "ar",
                         "--max-new-tokens", "4"]) == 0
    assert loads == [False, False] and len(af.read_text().splitlines()) == 1


def test_non_numeric_slider_value_rejected_by_argparse(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["generate", "--prompt", "hi", "--nodes", "many"])
    assert exc.value.code != 0 and "invalid int value" in capsys.readouterr().err


@pytest.mark.model
def test_generate_bundled_model_writes_trace(tmp_path):
    """The command from the engine issue's definition of done, on the real bundled model."""
    out = tmp_path / "t.json"
    env = {**os.environ, "PYTHONPATH": ROOT}
    proc = subprocess.run(
        [sys.executable, "-m", "opttree", "generate", "--prompt", "Explain photosynthesis.",
         "--method", "opt-tree", "--max-new-tokens", "24", "--trace", str(out), "--json"],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    summary = json.loads(proc.stdout)
    trace = loads(out.read_text())
    assert summary["summary"]["new_tokens"] == len(trace["output_ids"]) == 24
    assert trace["meta"]["method"] == "opt-tree" and trace["meta"]["drafter"] == "eagle"
    # Under the default auto budget the tree temperature is 1 (the card's fitted one is for fixed budgets).
    assert card_temperature(str(BUNDLED_HEAD)) != 1.0 and trace["meta"]["tree_temperature"] == 1.0
    assert "photosynthesis" in trace["output_text"].lower()
    # The default budget is auto: each step sized from this machine's cost curve, recorded in the trace.
    assert trace["meta"]["nodes"] == 0 and trace["meta"]["cost"]["tokens"][0] == 1
    # (a last step with one token left drafts nothing and has no auto table)
    assert all(s["auto"]["chosen_nodes"] == len(s["tokens"]) for s in trace["steps"] if s["tokens"])


def test_auto_node_budget_is_the_default_and_zero():
    """`--nodes auto` (the default) is nodes = 0: each step's size comes from the measured cost curve."""
    from opttree.cli import build_parser, decode_config

    parse = build_parser().parse_args
    for argv in ([], ["--nodes", "auto"], ["--nodes", "AUTO"], ["--nodes", "0"]):
        cfg = decode_config(parse(["generate", "--prompt", "x", *argv]), "opt-tree")
        assert cfg.nodes == 0 and cfg.auto_nodes, argv
    fixed = decode_config(parse(["generate", "--prompt", "x", "--nodes", "25"]), "opt-tree")
    assert fixed.nodes == 25 and not fixed.auto_nodes
    help_text = build_parser()._subparsers._group_actions[0].choices["generate"].format_help()
    assert "auto (the default" in " ".join(help_text.split())


def test_every_python_m_tool_gives_bad_input_one_error_line():
    """Every `python -m opttree.…` entry point runs its main through errors.guarded, so a bad flag value
    that argparse accepts (a budget of 0 where the tool needs n ≥ 1) is one `error:` line and status 2,
    not a traceback."""
    from pathlib import Path

    entry = 'if __name__ == "__main__":\n'
    tools = [p for p in Path(ROOT, "opttree").rglob("*.py") if entry in p.read_text()]
    assert len(tools) >= 15
    for p in tools:
        after = p.read_text().split(entry, 1)[1].splitlines()[0].strip()
        assert after == "raise SystemExit(guarded(main))", f"{p}: {after}"
    done = subprocess.run([sys.executable, "-m", "opttree.bench.profile_step", "--nodes", "0"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, env=dict(os.environ, PYTHONPATH=ROOT))
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip().splitlines() == [
        "error: --nodes, --tokens and --ops must be at least 1, --max-depth 1..20, and --dtypes must name at "
        "least one dtype."]


def test_guarded_turns_what_a_main_returns_into_a_status(capsys):
    from opttree.errors import BadInput, guarded

    assert guarded(lambda: 3) == 3 and guarded(lambda: {"result": 1}) == 0 and guarded(lambda: None) == 0

    def bad():
        raise BadInput("no such prompt set")
    assert guarded(bad) == 2 and capsys.readouterr().err == "error: no such prompt set\n"


def test_unexpected_failure_is_one_error_line(monkeypatch, capsys):
    """Not only the project's own errors: anything else is one `error:` line and status 1."""
    def broken(*args, **kwargs):
        raise RuntimeError("weights went missing\nsecond line of the message")

    monkeypatch.setattr("opttree.cli.load_from_args", broken)
    assert main(["generate", "--prompt", "hi", "--device", "cpu"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: unexpected RuntimeError: weights went missing second")
    assert "Traceback" not in err and "--verbose" in err

    assert main(["generate", "--prompt", "hi", "--device", "cpu", "--verbose"]) == 1
    err = capsys.readouterr().err
    assert "Traceback" in err and "in broken" in err
    assert err.strip().splitlines()[-1].startswith("error: unexpected RuntimeError")
    assert main(["--verbose", "generate", "--prompt", "hi", "--device", "cpu"]) == 1
    assert "Traceback" in capsys.readouterr().err


def test_unexpected_failure_in_eval_is_one_error_line(monkeypatch, capsys):
    def broken(argv):
        raise KeyError("answers")

    monkeypatch.setattr("opttree.cli.eval_main", broken)
    assert main(["eval", "--bench-name", "x"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: unexpected KeyError")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=all_settings(everyday=dict(nodes=[3, 8], max_depth=[2, 3], temperature=[0.7], max_new_tokens=[3])))
def test_cli_fuzz_every_setting_finishes_or_says_why(monkeypatch, capsys, values):
    """All settings at their edges, outside them and as junk, through `opttree generate` (in
    process, a tiny pair): text and status 0, or a clear message and status 2; never status 1."""
    from tiny import tiny_pair

    monkeypatch.setattr("opttree.cli.load_from_args", lambda args, need_draft=True: tiny_pair("eagle"))
    argv = ["generate", "--prompt", "t1 t2 t3", "--device", "cpu"]
    for name, value in values.items():
        argv += ["--" + name.replace("_", "-"), str(value)]
    try:
        code = main(argv)
    except SystemExit as exc:   # argparse refused a value (wrong type or choice): its usage error
        code = exc.code
    out, err = capsys.readouterr()
    event(f"status {code}")   # --hypothesis-show-statistics: how many runs finished
    assert "Traceback" not in err and "unexpected" not in err, (argv, err)
    assert code in (0, 2), (argv, code, err)
    if code == 0:
        assert out.strip() and "tokens in" in err
    else:
        assert err.strip().splitlines()[-1].startswith(("error:", "opttree generate: error:")), err


def test_cost_command_measures_caches_and_refreshes(tmp_path, monkeypatch, capsys):
    """`opttree cost`: the machine's curve (target forward vs tokens, draft layer vs width), cached per
    device, dtype, threads, target and draft; --refresh measures again."""
    from tiny import tiny_pair

    import opttree.bench.cli as bench_cli
    from opttree.engine import cost

    monkeypatch.setenv("OPTTREE_COSTS", str(tmp_path / "costs"))
    monkeypatch.setattr(bench_cli, "load_from_args", lambda args: tiny_pair("eagle"))
    measured = []
    real = cost.measure
    monkeypatch.setattr(cost, "measure", lambda pair, **kw: measured.append(1) or real(pair, **kw))
    out = tmp_path / "c.json"
    assert main(["cost", "--out", str(out), "--plot", str(tmp_path / "c.png")]) == 0
    first = strict_json(out.read_text())
    assert [p["tokens"] for p in first["points"]][:2] == [1, 2] and first["draft"]["points"][0]["width"] == 1
    assert first["key"]["target"] == "tiny-target" and first["key"]["drafter"] == "eagle"
    assert first["key"]["isa"] == cost.cpu_isa() and first["key"]["cores"] == os.cpu_count()
    assert first["load_avg"] is None or len(first["load_avg"]) == 3
    # the pair's curve, and its target's verify half that other drafts of the target reuse
    assert (tmp_path / "c.png").stat().st_size > 1000 and len(list((tmp_path / "costs").iterdir())) == 2
    assert main(["cost", "--out", str(out)]) == 0                  # cached: the same measurement
    assert json.loads(out.read_text()) == first and len(measured) == 1
    assert main(["cost", "--refresh", "--out", str(out)]) == 0     # measured again
    assert len(measured) == 2 and json.loads(out.read_text())["key"] == first["key"]
    printed = capsys.readouterr().out
    assert "after a 128-token KV prefix:" in printed and "after a 384-token KV prefix:" in printed
    assert first["longer"]["prefix_tokens"] == 384 and len(first["longer"]["points"]) == len(first["points"])


def test_drafts_of_one_target_share_its_verify_half(tmp_path, monkeypatch):
    """The verify forwards depend on the target alone: a second draft of the same target times only its
    own layers and reuses the first one's verify points; a refresh (the app's button) times both again."""
    from tiny import tiny_pair

    from opttree.engine import cost

    monkeypatch.setenv("OPTTREE_COSTS", str(tmp_path))
    timed = []
    real = cost.time_verify
    monkeypatch.setattr(cost, "time_verify", lambda pair, *a, **kw: timed.append(kw) or real(pair, *a, **kw))
    head, classic = tiny_pair("eagle"), tiny_pair("classic")
    first = cost.load_or_measure(head)
    assert len(timed) == 2                        # after the 128- and the longer prefix
    second = cost.load_or_measure(classic)
    assert len(timed) == 2 and second["key"]["drafter"] == "classic" and second["key"] != first["key"]
    assert second["points"] == first["points"] and second["longer"]["points"] == first["longer"]["points"]
    assert second["draft"]["points"] != first["draft"]["points"] and second["longer"]["draft"]["points"]
    assert cost.step_cost(second).verify_ms == cost.step_cost(first).verify_ms
    assert len(list(tmp_path.iterdir())) == 3     # two pairs' curves and the target's verify half
    again = cost.load_or_measure(classic, refresh=True)
    assert len(timed) == 4 and again["key"] == second["key"]
    # The head then takes the target's new verify half (its own layers timed again, not the target's):
    # two drafts of one target never price verification differently.
    drafted = []
    real_draft = cost.time_draft
    monkeypatch.setattr(cost, "time_draft", lambda pair, *a, **kw: drafted.append(1) or real_draft(pair, *a, **kw))
    head.cost_curve = None
    renewed = cost.load_or_measure(head)
    assert len(timed) == 4 and len(drafted) == 2 and renewed["key"] == first["key"]
    assert renewed["points"] == again["points"] and renewed["longer"]["points"] == again["longer"]["points"]
    head.cost_curve = None
    assert cost.load_or_measure(head) == renewed and len(drafted) == 2       # cached again from then on


def test_the_top_level_help_lists_every_command_eval_included(capsys):
    from opttree.cli import main

    with pytest.raises(SystemExit):
        main(["--help"])
    listed = " ".join(capsys.readouterr().out.split())      # argparse wraps the help lines
    assert all(name in listed for name in ("generate", "bench", "serving", "eval")) and "opttree eval --help" in listed
    with pytest.raises(SystemExit):
        main(["eval", "--help"])
    assert "--answer-file" in capsys.readouterr().out


def test_eval_anywhere_but_first_is_a_clear_error(capsys):
    """`opttree eval` has its own flags and is handed over before the parser; a line that reaches the
    parser with it (an abbreviated --verb before it) is refused, never an AttributeError."""
    from opttree.cli import eval_misplaced, main
    from opttree.errors import BadInput

    with pytest.raises(SystemExit) as end:
        main(["--verb", "eval"])
    assert end.value.code == 2 and "unrecognized arguments: --verb" in capsys.readouterr().err
    with pytest.raises(BadInput, match="eval first"):
        eval_misplaced(None)


def test_a_local_folder_without_config_or_tokenizer_is_named_plainly(tmp_path, capsys):
    """A folder with no config.json, or a model saved without its tokenizer, is refused in one line that says
    what the folder lacks (not transformers' "Couldn't instantiate the backend tokenizer from one of:" or
    "Should have a `model_type` key in its config.json"), and nothing is fetched for it."""
    from transformers import LlamaConfig  # transformers is heavy: only this test writes a config

    empty, untokenized = tmp_path / "weights_only", tmp_path / "no_tokenizer"
    empty.mkdir()
    (empty / "model.safetensors").write_bytes(b"{}")
    LlamaConfig(vocab_size=64, hidden_size=32, num_hidden_layers=1, num_attention_heads=4).save_pretrained(untokenized)
    for folder, needle in ((empty, "has no config.json"), (untokenized, "has no tokenizer")):
        assert main(["generate", "--prompt", "hi", "--method", "ar", "--base-model-path", str(folder)]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and err.count("\n") == 1, err
        assert needle in err and "Couldn't instantiate" not in err and "model_type" not in err, err
