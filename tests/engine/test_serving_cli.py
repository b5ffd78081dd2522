"""`opttree export-tree` and `opttree serving` on bad input: one `error:` line on stderr, status 2, nothing
on stdout, and no model loaded; and what a good export prints (a config current vLLM takes, with notes)."""

import json

import pytest

from opttree.bench.tree_export import adaptivity_line
from opttree.cli import main


@pytest.fixture
def no_model(monkeypatch):
    """Loading a model (or measuring) in these tests is a failure: every check comes before it."""
    def refuse(*args, **kwargs):
        raise AssertionError("a model was loaded before the input was checked")

    monkeypatch.setattr("opttree.cli.load_from_args", refuse)
    monkeypatch.setattr("opttree.cli.heldout_questions", refuse)


def refused(capsys, argv, needle):
    """Run `argv`; it must end in status 2 with exactly one `error:` line holding `needle`, stdout empty."""
    try:
        code = main(argv)
    except SystemExit as exc:        # argparse's own refusals
        code = exc.code
    out, err = capsys.readouterr()
    assert code == 2, (argv, code, err)
    assert out == "" and len(err.strip().splitlines()) == 1 and err.startswith("error: "), (argv, out, err)
    assert needle in err and "unexpected" not in err, (argv, err)


EXPORT = ["export-tree", "--format", "vllm"]


@pytest.mark.parametrize("argv, needle", [
    ([*EXPORT, "--method", "chain", "--nodes", "0"], "--nodes must be between 1 and 500"),
    ([*EXPORT, "--method", "sequoia", "--nodes", "-1"], "--nodes must be between 1 and 500"),
    ([*EXPORT, "--method", "opt-tree", "--nodes", "0"], "--nodes must be between 1 and 500"),
    (["export-tree", "--format", "sglang", "--method", "binary", "--nodes", "0"], "--nodes must be between 1"),
    ([*EXPORT, "--method", "sequoia", "--nodes", "1000000"], "--nodes must be between 1 and 500"),
    ([*EXPORT, "--method", "binary", "--max-depth", "0"], "--max-depth must be between 1 and 20"),
    ([*EXPORT, "--method", "chain", "--max-depth", "-3"], "--max-depth must be between 1 and 20"),
    ([*EXPORT, "--method", "opt-tree", "--fit-prompts", "0"], "--fit-prompts must be at least 1"),
    ([*EXPORT, "--method", "opt-tree", "--fit-prompts", "-1"], "--fit-prompts must be at least 1"),
    ([*EXPORT, "--method", "sequoia", "--ea-model-path", "/no/such/head.safetensors"], "--ea-model-path"),
    ([*EXPORT, "--method", "sequoia", "--draft-model-path", "drafts/none.safetensors"], "no such file"),
    ([*EXPORT, "--method", "sequoia", "--drafter", "early-exit"], "no speculative method for the early-exit"),
    (["export-tree", "--format", "vllm-tree", "--method", "eagle-static"], "one child count per level"),
    (["export-tree", "--format", "vllm-tree", "--method", "binary", "--drafter", "classic"], "only with method"),
    ([*EXPORT, "--method", "chain", "--nodes", "many"], "invalid int value"),
    ([*EXPORT, "--method", "chain", "--target", "/no/such/model"], "no such folder"),
    ([*EXPORT, "--method", "chain", "--base-model-path", "tests/tiny.py"], "is a file: give the model's folder"),
    (["serving", "--check-prompts", "0"], "--check-prompts must be at least 1"),
    (["serving", "--tree-prompts", "-2"], "--tree-prompts must be at least 1"),
])
def test_bad_input_is_one_error_line_before_any_model(capsys, no_model, argv, needle):
    """Each failed before: status 0 with an empty or invalid config, a MemoryError, a traceback-free but
    late failure (serving after minutes of measuring), or argparse's usage block before the error."""
    refused(capsys, argv, needle)


def test_output_paths_are_checked_before_the_work(capsys, no_model, tmp_path):
    """A folder or a path under a file as --report, --out or --json: refused first, nothing printed before
    (failed before: the config printed, then an IsADirectoryError; serving measured for minutes first)."""
    blocker = tmp_path / "file"
    blocker.write_text("x")
    refused(capsys, [*EXPORT, "--method", "chain", "--report", str(tmp_path)], "is a folder")
    refused(capsys, [*EXPORT, "--method", "chain", "--report", str(blocker / "r.json")], "cannot write --report")
    refused(capsys, ["serving", "--out", str(blocker / "page.md")], "cannot write --out")
    refused(capsys, ["serving", "--json", str(tmp_path)], "is a folder")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


def test_the_printed_vllm_config_is_what_current_vllm_takes(capsys, tmp_path):
    """stdout is the `--speculative-config` object itself, a chain as deep as the tree; a shape smaller than
    asked says so; the report holds the same (failed before: a wrapped tree config, silent capping)."""
    report = tmp_path / "sub" / "chain.json"
    assert main([*EXPORT, "--method", "chain", "--nodes", "25", "--report", str(report)]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out) == {"method": "eagle", "num_speculative_tokens": 10}
    assert "holds 10 of the 25 nodes asked for" in err and "--speculative-config" in err and "PR #42121" in err
    saved = json.loads(report.read_text())
    assert saved["text"] == out.strip() and saved["format"] == "vllm"
    assert main([*EXPORT, "--method", "eagle-static", "--nodes", "60", "--drafter", "lookup"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out) == {"method": "ngram", "num_speculative_tokens": 5}
    assert "holds 25 of the 60" in err and '"model"' not in err          # prompt lookup loads no draft
    assert main(["export-tree", "--format", "vllm-tree", "--method", "binary", "--nodes", "6"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["speculative_token_tree"] == "[(0,), (1,), (0, 0), (0, 1), (1, 0), (1, 1)]"
    assert "--attention-backend TREE_ATTN" in err


def test_the_vllm_config_names_the_draft_vllm_loads_when_the_draft_flag_gives_one(capsys, tmp_path):
    """vLLM refuses eagle and draft_model without `model` ("num_speculative_tokens was provided but without
    speculative model"): a draft flag naming a hub id or a model folder fills it, so stdout pipes straight into
    vLLM; this project's own draft files (and the bundled ones) leave the note saying what to add (failed before:
    the JSON never held `model`)."""
    folder = tmp_path / "my draft"
    folder.mkdir()
    (folder / "config.json").write_text("{}")     # a Hugging Face model's folder
    assert main([*EXPORT, "--method", "chain", "--nodes", "4", "--draft-model-path", str(folder)]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out) == {"method": "draft_model", "model": str(folder.resolve()), "num_speculative_tokens": 4}
    assert 'with "model"' not in err
    assert main(["export-tree", "--format", "vllm-tree", "--method", "binary", "--nodes", "2", "--ea-model-path",
                 "yuhuili/EAGLE-LLaMA3-Instruct-8B"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["model"] == "yuhuili/EAGLE-LLaMA3-Instruct-8B" and 'with "model"' not in err
    own = tmp_path / "head.safetensors"
    own.write_bytes(b"")
    for draft in (["--ea-model-path", str(own)], []):
        assert main([*EXPORT, "--method", "chain", "--nodes", "4", *draft]) == 0
        out, err = capsys.readouterr()
        assert "model" not in json.loads(out) and 'with "model": the path of a draft vLLM can load' in err


def test_the_vllm_serve_line_quotes_a_draft_path_holding_a_quote_for_the_shell(capsys, tmp_path):
    """The note's `vllm serve` line holds the JSON quoted for the shell, as SGLang's draft path is: a draft folder
    whose path has a `'` gives back the same JSON, its "model" that folder (failed before: the note said to wrap
    the JSON in single quotes, which that `'` closes)."""
    import shlex

    folder = tmp_path / "bob's models" / "draft"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")     # a Hugging Face model's folder
    for fmt, method in (("vllm", "chain"), ("vllm-tree", "binary")):
        assert main(["export-tree", "--format", fmt, "--method", method, "--nodes", "6", "--ea-model-path",
                     str(folder)]) == 0
        out, err = capsys.readouterr()
        line = next(x for x in err.splitlines() if "vllm serve" in x)
        argv = shlex.split(line.split("Pass it as: ", 1)[1])
        assert argv[:3] == ["vllm", "serve", "HuggingFaceTB/SmolLM2-135M-Instruct"], argv   # the bundled target
        config = json.loads(argv[argv.index("--speculative-config") + 1])
        assert config == json.loads(out) and config["model"] == str(folder.resolve())
        assert ("--attention-backend" in argv) == (fmt == "vllm-tree")


def test_the_sglang_flags_name_the_draft_when_the_draft_flag_gives_one(capsys, tmp_path):
    """SGLang's EAGLE and STANDALONE load the draft from --speculative-draft-model-path (server_args.py: a local
    folder or a hub id): the same draft flags that fill vLLM's "model" fill it, a folder absolute and quoted for
    the shell; this project's own draft files leave a note saying what to add (failed before: never named)."""
    import shlex

    folder = tmp_path / "my draft"
    folder.mkdir()
    (folder / "config.json").write_text("{}")     # a Hugging Face model's folder
    sglang = ["export-tree", "--format", "sglang", "--method", "binary", "--nodes", "6"]
    assert main([*sglang, "--drafter", "classic", "--draft-model-path", str(folder)]) == 0
    out, err = capsys.readouterr()
    flags = shlex.split(out)
    assert flags[flags.index("--speculative-draft-model-path") + 1] == str(folder.resolve())
    assert flags[flags.index("--speculative-algorithm") + 1] == "STANDALONE" and "--speculative-draft-model" not in err
    assert main([*sglang, "--ea-model-path", "yuhuili/EAGLE-LLaMA3-Instruct-8B"]) == 0
    assert "--speculative-draft-model-path yuhuili/EAGLE-LLaMA3-Instruct-8B" in capsys.readouterr().out
    own = tmp_path / "head.safetensors"
    own.write_bytes(b"")
    for draft in (["--ea-model-path", str(own)], []):
        assert main([*sglang, *draft]) == 0
        out, err = capsys.readouterr()
        assert "--speculative-draft-model-path" not in out and "--speculative-draft-model-path <" in err
    assert main([*sglang, "--drafter", "lookup"]) == 0                   # NGRAM loads no draft
    assert "--speculative-draft-model-path" not in "".join(capsys.readouterr())


def test_sequoia_says_where_its_vector_came_from(capsys):
    assert main([*EXPORT, "--method", "sequoia", "--nodes", "10"]) == 0
    assert "acceptance by rank from the card of" in capsys.readouterr().err
    assert main([*EXPORT, "--method", "sequoia", "--nodes", "10", "--drafter", "lookup"]) == 0
    assert "the default prior" in capsys.readouterr().err


def test_an_opt_tree_stand_in_vllm_cannot_draft_is_refused_with_its_report_written(capsys, tmp_path, monkeypatch):
    """OPT-Tree's static stand-in is known only after its fit (minutes): a vllm-tree refusal then still
    writes the report, with the shape and the reason (it left an empty folder)."""
    uneven = [(0,), (1,), (0, 0)]
    monkeypatch.setattr("opttree.cli._adaptive_static", lambda args, cfg, log: (uneven, {"compare": {
        "tau_opt_tree": 2.0, "tau_static": 1.8, "tau_gain": 0.2, "speed_ratio_opt_tree_over_static": 1.1}}))
    report = tmp_path / "opt.json"
    assert main(["export-tree", "--format", "vllm-tree", "--method", "opt-tree", "--nodes", "3",
                 "--report", str(report)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.strip().splitlines()[-1].startswith("error: ") and "one child count per level" in err
    saved = json.loads(report.read_text())
    assert saved["paths"] == [list(p) for p in uneven] and saved["text"] is None
    assert "one child count per level" in saved["notes"][-1] and saved["adaptivity"]["compare"]["tau_gain"] == 0.2


def test_the_opt_tree_line_signs_the_gain_and_names_the_basis_of_its_speed_ratio(capsys, monkeypatch):
    """export-tree --method opt-tree's line gives τ's gain with its own sign and says the speed ratio comes from
    one interleaved run on this machine. Failed before: the line wrote "(+{gain})", so a static stand-in that
    accepted more read "(+-0.12)", and the ratio named no basis."""
    monkeypatch.setattr("opttree.cli._adaptive_static", lambda args, cfg, log: ([(0,), (0, 0)], {"compare": {
        "prompts": ["a", "b", "c"], "tau_opt_tree": 2.9, "tau_static": 3.02, "tau_gain": -0.12,
        "speed_ratio_opt_tree_over_static": 0.97}}))
    assert main(["export-tree", "--method", "opt-tree", "--nodes", "2"]) == 0
    err = capsys.readouterr().err
    assert "+-" not in err and "vs its static stand-in τ 3.02 at n = 2 (-0.12)" in err
    assert "×0.97 (one run on this machine, the two interleaved over 3 prompts)" in err
    untimed = adaptivity_line({"tau_opt_tree": 1.0, "tau_static": 1.0, "tau_gain": 0.0,
                               "speed_ratio_opt_tree_over_static": None}, 2)
    assert "×None" not in untimed and "the static tree's: not timed" in untimed


@pytest.mark.parametrize("choice", ["run", "sequoia"])
def test_the_serving_tabs_command_line_for_a_run_on_ones_own_model_reproduces_its_export(capsys, no_model, tmp_path,
                                                                                         choice):
    """The Serving tab's `opttree export-tree` line for a run on a target of one's own with its own draft names
    that draft as well as the target (failed before: the line named the target alone, or for Sequoia neither,
    and export-tree refused it: that target has no bundled draft), and the line prints the tab's SGLang flags
    with the draft's folder, where the tab's own flags hold a slot its note explains (it shows no path)."""
    import shlex

    from viz import serving

    draft, target = tmp_path / "my draft", tmp_path / "my model"
    for folder in (draft, target):
        folder.mkdir()
        (folder / "config.json").write_text("{}")      # a Hugging Face model's folder
    paths = [(0,), (1,), (0, 0), (0, 1), (0, 0, 0)]
    step = {"parents": [-1, -1, 0, 0, 2], "rank": [0, 1, 0, 1, 0], "tokens": [1, 2, 3, 4, 5]}
    trace = {"meta": {"method": "sequoia", "drafter": "classic", "nodes": 5, "max_depth": 10,
                      "target": str(target), "draft": str(draft), "acceptance_source": "default",
                      "acceptance_by_rank": [0.55, 0.18, 0.09, 0.06, 0.04, 0.03, 0.025, 0.02]}, "steps": [step] * 2}
    text = serving.export_markdown(trace, choice, len(paths))
    line = next(x for x in text.splitlines() if x.startswith("opttree export-tree")).replace("--format vllm ",
                                                                                             "--format sglang ")
    assert main(shlex.split(line)[1:]) == 0, capsys.readouterr().err
    flags = capsys.readouterr().out.strip()
    served = f"--speculative-draft-model-path {shlex.quote(str(draft.resolve()))}"
    slot = f"--speculative-draft-model-path {shlex.quote(serving.DRAFT_SLOTS['classic'])}"
    assert served in flags and flags.startswith("--speculative-algorithm STANDALONE")
    assert f"```bash\n{flags.replace(served, slot)}\n```" in text
    assert "This run's draft, my draft, is a file or folder of the machine that ran it" in text


@pytest.mark.parametrize("drafter, draft, flags", [("classic", "self", "--drafter classic --draft-model-path "
                                                    "smollm2-135m-instruct"),
                                                   ("eagle", "random", "--drafter eagle --ea-model-path random")])
def test_the_serving_tabs_command_line_for_the_apps_self_and_random_pairs_names_what_ran(capsys, tmp_path, drafter,
                                                                                         draft, flags):
    """The app's `self` pair (the target drafting for itself) and `random` pair (an untrained head) got a line
    naming only --drafter, so the CLI read the bundled draft and its card, not what ran (failed before). The
    line names the run's draft: the target as its own classic draft, or `random`, which the head loader takes;
    Sequoia then reads no card, as the run did, and prints the tab's flags: the target drafting for itself with
    its hub release as the draft, the untrained head with none (the tab's block holds a slot there)."""
    import shlex

    from viz import serving

    paths = [(0,), (1,), (0, 0), (0, 1), (0, 0, 0)]
    trace = {"meta": {"method": "opt-tree", "drafter": drafter, "nodes": 5, "max_depth": 10,
                      "target": "smollm2-135m-instruct", "draft": draft}, "steps": []}
    for choice in ("run", "sequoia"):
        line = serving.cli_text(trace, choice, paths, ["sglang"])[-1]
        assert flags in line, line
    report = tmp_path / "r.json"
    text = serving.export_markdown(trace, "sequoia", 5)
    line = next(x for x in text.splitlines() if x.startswith("opttree export-tree")).replace("--format vllm ",
                                                                                             "--format sglang ")
    assert main([*shlex.split(line)[1:], "--report", str(report)]) == 0, capsys.readouterr().err
    slot = f" --speculative-draft-model-path {shlex.quote(serving.DRAFT_SLOTS[drafter])}"
    assert f"```bash\n{capsys.readouterr().out.strip()}\n```" in text.replace(slot, "")
    assert json.loads(report.read_text())["acceptance_source"].startswith("the default prior")
    assert main(shlex.split(line.replace("--format sglang ", "--format vllm "))[1:]) == 0
    served = json.loads(capsys.readouterr().out).get("model")
    assert served == ("HuggingFaceTB/SmolLM2-135M-Instruct" if draft == "self" else None)  # no untrained head


def test_a_folder_holding_this_projects_own_head_is_not_named_as_a_draft_the_engines_load(capsys, tmp_path):
    """--ea-model-path takes a folder holding this project's head.safetensors (the loader reads the file in it);
    neither engine reads that format, so the export leaves vLLM's "model" and SGLang's draft path to the notes,
    as it does for the file itself. A folder with a config.json (a Hugging Face model, an EAGLE checkpoint) is
    named."""
    own = tmp_path / "my head"
    own.mkdir()
    (own / "head.safetensors").write_bytes(b"")
    assert main([*EXPORT, "--method", "chain", "--nodes", "4", "--ea-model-path", str(own)]) == 0
    out, err = capsys.readouterr()
    assert "model" not in json.loads(out) and 'with "model": the path of a draft vLLM can load' in err
    assert main(["export-tree", "--format", "sglang", "--method", "binary", "--nodes", "6", "--ea-model-path",
                 str(own)]) == 0
    out, err = capsys.readouterr()
    assert "--speculative-draft-model-path" not in out and "--speculative-draft-model-path <" in err
    (own / "config.json").write_text("{}")
    assert main([*EXPORT, "--method", "chain", "--nodes", "4", "--ea-model-path", str(own)]) == 0
    assert json.loads(capsys.readouterr().out)["model"] == str(own.resolve())


def test_export_tree_format_defaults_to_vllm(capsys):
    """`--format vllm` is the default, as docs/serving.md says (failed before: --format was required)."""
    assert main(["export-tree", "--method", "chain", "--nodes", "3"]) == 0
    assert json.loads(capsys.readouterr().out)["num_speculative_tokens"] == 3


def test_the_engine_lines_name_the_target_the_engines_load(capsys, tmp_path):
    """The notes' `vllm serve` and `launch_server` lines name the target as the engines load it, by the draft's
    rule (failed before: always `<target>`): the bundled target by its hub release, a hub id as given, a model
    folder as an absolute path quoted for the shell."""
    import re
    import shlex

    folder = tmp_path / "bob's model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")     # a Hugging Face model's folder
    for target, served in ((None, "HuggingFaceTB/SmolLM2-135M-Instruct"),
                           ("meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.1-8B-Instruct"),
                           (str(folder), str(folder.resolve()))):
        named = ["--target", target] if target else []
        for fmt, method, line in (("vllm", "chain", "vllm serve"), ("vllm-tree", "binary", "vllm serve"),
                                  ("sglang", "binary", "sglang.launch_server")):
            assert main(["export-tree", "--format", fmt, "--method", method, "--nodes", "6", *named]) == 0
            said = next(x for x in capsys.readouterr().err.splitlines() if line in x)
            argv = shlex.split(re.split(r"Pass (?:it|them) as:? ", said)[1].split(" <these flags>")[0])
            place = argv.index("serve") + 1 if fmt != "sglang" else argv.index("--model-path") + 1
            assert argv[place] == served, (fmt, said)


def test_export_tree_checks_the_bundled_target_without_converting_it(capsys, monkeypatch):
    """export-tree never loads the target for a static method, so checking it reads no weights: the bundled
    target passes by its id (failed before: the check resolved it, which converts the GGUF on a fresh cache,
    tens of seconds and half a gigabyte for a chain's config), and its line still names its hub release."""
    def convert():
        raise AssertionError("the bundled target was resolved (converted on a fresh cache) for an export")

    monkeypatch.setattr("opttree.models.bundled.source", convert)
    for target in ("smollm2-135m-instruct", "bundled", "smollm2"):
        assert main([*EXPORT, "--method", "chain", "--nodes", "3", "--target", target]) == 0
        assert "vllm serve HuggingFaceTB/SmolLM2-135M-Instruct " in capsys.readouterr().err


@pytest.mark.parametrize("choice", ["chain", "binary", "eagle-static"])
def test_the_serving_tabs_command_line_for_a_fixed_shape_names_the_target_its_engine_lines_name(capsys, choice):
    """For a run on a hub model, the tab's engine lines serve that model; its command line for a shape the method
    alone gives (no draft needed) named no target, so the CLI's lines served the bundled target's release (failed
    before). The line names the run's target, and prints the tab's `vllm serve` line."""
    import re  # the tab's and the CLI's serve lines, read the same way
    import shlex  # the tab's line, split as the shell splits it

    from viz import serving  # the app's view, which the other tests here do not need

    trace = {"meta": {"method": "chain", "drafter": "lookup", "nodes": 4, "max_depth": 10,
                      "target": "Qwen/Qwen2.5-0.5B-Instruct", "draft": ""}, "steps": []}
    text = serving.export_markdown(trace, choice, 6)
    line = next(x for x in text.splitlines() if x.startswith("opttree export-tree"))
    assert main(shlex.split(line)[1:]) == 0
    served = re.compile(r"vllm serve (\S+)")
    cli = served.findall(capsys.readouterr().err)
    assert cli and set(cli) == set(served.findall(text)) == {"Qwen/Qwen2.5-0.5B-Instruct"}, (line, cli)
