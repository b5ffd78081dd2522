"""The Serving tab's views (viz/serving.py): a run's trees exported as vLLM and SGLang take them, parsed
back, and the batching chart and sentence from a model table. Pure: traces and tables, no model."""

import json
from pathlib import Path

import pytest

from opttree.config import BUNDLED_DRAFTS
from opttree.models.bundled import HUB_FALLBACK
from opttree.paths import DRAFTS
from opttree.trees.export import parse_sglang_args, parse_vllm_config, rank_paths, static_paths
from opttree.trees.sequoia import DEFAULT_ACCEPTANCE, optimal_tree
from opttree.trees.static import EAGLE_25
from viz import serving


def step_of(paths):
    """A recorded step (parents, rank) holding these level-order rank paths."""
    index = {p: i for i, p in enumerate(paths)}
    return {"parents": [index[p[:-1]] if len(p) > 1 else -1 for p in paths], "rank": [p[-1] for p in paths],
            "tokens": list(range(len(paths)))}


def trace_of(steps, **meta):
    return {"meta": {"method": "opt-tree", "drafter": "eagle", "nodes": 25, **meta}, "steps": steps}


def test_a_static_runs_export_is_its_own_shape():
    trace = trace_of([step_of(EAGLE_25)] * 3)
    paths, notes = serving.export_paths(trace, "run", 25)
    assert paths == EAGLE_25 and "3 trees" in notes[0]
    assert serving.export_paths(trace, "run", 10)[0] == EAGLE_25[:10]     # the 10 most frequent, still a rank tree


def test_an_adaptive_runs_export_is_its_most_frequent_shape():
    a, b = [(0,), (0, 0), (0, 0, 0)], [(0,), (1,), (0, 0)]
    trace = trace_of([step_of(a), step_of(a), step_of(b)])
    assert serving.export_paths(trace, "run", 3)[0] == [(0,), (0, 0), (0, 0, 0)]
    paths, notes = serving.export_paths(trace, "run", 10)       # only 4 distinct paths ever stood
    assert sorted(paths) == sorted({*a, *b}) and "only 4 distinct" in notes[0]


def test_sequoia_reads_the_runs_vector_and_falls_back_to_the_prior():
    vector = [0.6, 0.15, 0.05]
    trace = trace_of([], acceptance_by_rank=vector, acceptance_source="card")
    assert serving.export_paths(trace, "sequoia", 12)[0] == optimal_tree(vector, 12, serving.EXPORT_DEPTH)
    for bad in ([1.5], [0.7, 0.7], "x", [True], []):
        got, source = serving.run_vector(trace_of([], acceptance_by_rank=bad))
        assert got == DEFAULT_ACCEPTANCE and source == "a default prior: the run records none measured"
    assert serving.run_vector(None)[1] == "a default prior: no run yet"         # not a run that does not exist
    # an imported trace's source is free text, shown in the panel's Markdown: never markup there
    hostile = trace_of([], acceptance_by_rank=vector, acceptance_source='<img src="https://example.com/p.png">')
    assert "<img" not in serving.export_markdown(hostile, "sequoia", 12)
    # nor can a name close the command line's code block: its fence is longer than any run of backticks in it
    fenced = trace_of([], acceptance_by_rank=vector, target="my-target", draft="x\n````\n![x](https://example.com/p.png)\n")
    block = serving.export_markdown(fenced, "sequoia", 12).split("```bash\n")[-1]
    assert block.startswith("opttree export-tree") and block.index("![x]") < block.find("\n`````")
    assert serving.export_paths(None, "binary", 7)[0] == static_paths("binary", 7, 10)
    assert "**1 node, depth 1.**" in serving.export_markdown(None, "chain", 1)
    chain = serving.export_paths(None, "chain", 25)
    assert len(chain[0]) == 10 and "holds 10 of the 25 nodes asked for (capped by the max depth 10)" in chain[1][0]


def test_the_panel_prints_strings_that_parse_back_to_the_tree():
    trace = trace_of([step_of(EAGLE_25)] * 2)
    text = serving.export_markdown(trace, "run", 25)
    vllm = text.split("```json\n")[1].split("\n```")[0]
    assert parse_vllm_config(vllm) == ("eagle", [(0,) * d for d in range(1, 6)])     # vLLM ≥ 0.21: a chain
    flags = parse_sglang_args(text.split("```bash\n")[1].split("\n```")[0])
    assert flags.draft_tokens == 26 and flags.steps == max(len(p) for p in EAGLE_25) and flags.algorithm == "EAGLE"
    assert "--method opt-tree --nodes 25 --drafter eagle" in text
    data = json.loads(serving.export_json(trace, "run", 25))
    assert [tuple(p) for p in data["paths"]] == EAGLE_25 and data["sglang"]["text"].count("--speculative") == 5


def test_the_panel_says_what_each_vllm_takes_as_the_cli_does():
    """The panel shows the same texts and refusals as `export-tree` (trees/export.py engine_export): current
    vLLM's chain, vLLM ≤ 0.20's tree only where it can draft it, with TREE_ATTN (failed before: one vLLM block
    holding the tree, which current vLLM refuses)."""
    uneven = serving.export_markdown(trace_of([step_of(EAGLE_25)]), "run", 25)
    assert "PR #42121" in uneven and "speculative_token_tree" not in uneven.split("```json\n")[1].split("```")[0]
    assert "**vLLM ≤ 0.20 (speculative_token_tree)**: cannot take it." in uneven
    assert "one child count per level" in uneven and uneven.count("```json") == 1
    even = serving.export_markdown(trace_of([]), "binary", 6)
    tree = even.split("```json\n")[2].split("\n```")[0]
    assert parse_vllm_config(tree) == ("eagle", static_paths("binary", 6, 10)) and "TREE_ATTN" in even
    data = json.loads(serving.export_json(trace_of([], drafter="classic"), "binary", 6))
    assert data["vllm-tree"]["text"] is None and "only with method 'eagle'" in data["vllm-tree"]["notes"][0]
    assert parse_sglang_args(data["sglang"]["text"]).algorithm == "STANDALONE"


def test_the_tabs_hint_gives_the_vllm_versions_docs_serving_gives():
    """vLLM took a static tree (speculative_token_tree) from its 0.10 series to 0.20, as docs/serving.md says
    (failed before: the Serving tab's hint said "0.20 took a static tree", as if 0.20 alone had)."""
    from ui.serving import HINT

    doc = (Path(__file__).resolve().parents[2] / "docs" / "serving.md").read_text(encoding="utf-8")
    assert "from the 0.10 series on" in doc and "**vLLM ≤ 0.20 (`--format vllm-tree`)" in doc
    assert "vLLM ≥ 0.21 verifies a chain (0.10–0.20 took a static tree)." in HINT


def engine_blocks(**meta) -> tuple[str, str | None, str]:
    """The panel for a chain of 3 on a run with this meta: its text, vLLM's "model" and SGLang's flags."""
    text = serving.export_markdown(trace_of([], **meta), "chain", 3)
    vllm = json.loads(text.split("```json\n")[1].split("\n```")[0])
    return text, vllm.get("model"), text.split("```bash\n")[1].split("\n```")[0]


def test_each_engine_block_names_where_the_draft_is_or_what_to_put_there():
    """vLLM refuses eagle and draft_model without "model", and SGLang's EAGLE and STANDALONE load the draft from
    --speculative-draft-model-path: the blocks left both out for every pair the app serves, under a note about
    export-tree's flags (failed before). They hold the draft's hub id where one is known (the bundled target
    drafting for itself: its hub release), else a slot the line above them explains, naming no server path."""
    bundled, head, classic = "smollm2-135m-instruct", serving.DRAFT_SLOTS["eagle"], serving.DRAFT_SLOTS["classic"]
    text, model, sglang = engine_blocks(target=bundled, draft="smollm2-eagle-head.safetensors")
    assert model == head and f"--speculative-draft-model-path '{head}'" in sglang
    assert "opttree/assets/drafts/smollm2-eagle-head.safetensors" in text and "own format" in text
    text, model, sglang = engine_blocks(drafter="classic", target=bundled, draft="self")
    assert model == HUB_FALLBACK and f"--speculative-draft-model-path {HUB_FALLBACK} " in sglang
    assert "drafts for itself" in text
    text, model, _ = engine_blocks(target=bundled, draft="random")
    assert model == head and "untrained head" in text
    hub = "yuhuili/EAGLE-LLaMA3-Instruct-8B"                     # a command-line run records its hub draft
    assert engine_blocks(target="org/model", draft=hub)[1] == hub
    # a served folder pair's trace names its target and draft by their base names: a slot, and no path
    text, model, _ = engine_blocks(drafter="classic", target="my-llama", draft="tiny-draft")
    assert model == classic and "draft, tiny-draft, is" in text and "does not show" in text
    assert engine_blocks(drafter="classic", target="my-llama", draft="self")[1] == "<your target's folder or hub id>"
    lookup = serving.export_markdown(trace_of([], drafter="lookup"), "chain", 3)
    assert '"model"' not in lookup and "draft-model-path" not in lookup and "The draft in" not in lookup


def test_the_engine_lines_name_the_target_where_the_trace_gives_one():
    """The `vllm serve` and `launch_server` lines under the blocks name the target where the engines can load what
    the run recorded (failed before: always `<target>`): the bundled target by its hub release, with a sentence
    saying what that is; a command-line run's hub id as recorded; a served folder (its base name) keeps the slot.
    The downloaded JSON carries the same target."""
    for target, served in (("smollm2-135m-instruct", HUB_FALLBACK), ("org/model", "org/model"), ("my-llama", None)):
        trace = trace_of([], target=target, draft="smollm2-eagle-head.safetensors")
        text = serving.export_markdown(trace, "chain", 3)
        lines = [x for x in text.splitlines() if "vllm serve" in x or "--model-path" in x]
        shown = served or "&lt;target&gt;"       # the panel's notes are escaped markdown
        assert len(lines) == 3 and all(f" {shown} " in x for x in lines), lines
        assert ("The engines serve HuggingFaceTB/SmolLM2-135M-Instruct" in text) == (served == HUB_FALLBACK)
        # a recorded org/name may be a hub id or a command line's relative folder: the sentence says both
        assert ("a hub id, or a folder of the machine that ran it" in text) == (served == "org/model")
        saved = json.loads(serving.export_json(trace, "chain", 3))
        assert saved["target"] == served and f" {served or '<target>'} " in saved["vllm"]["notes"][-1]


def test_the_engine_blocks_read_the_trace_not_this_machines_files(monkeypatch):
    """The panel is a view of the trace: which draft a run's recorded name is (the bundled one, one of the
    machine that ran it) comes from the name alone. It asked this machine's file system whether
    assets/drafts/ held a file of the recorded name (failed before: Path.is_file was called)."""
    asked = []
    for method in ("is_file", "exists", "is_dir", "stat"):
        real = getattr(Path, method)
        monkeypatch.setattr(Path, method, lambda self, *a, _m=method, _real=real, **k: asked.append((_m, str(self)))
                            or _real(self, *a, **k))
    bundled = engine_blocks(target="smollm2-135m-instruct", draft="smollm2-eagle-head.safetensors")
    other = engine_blocks(drafter="classic", target="my-llama", draft="smollm2-eagle-head.json")
    monkeypatch.undo()
    assert not asked, asked
    assert bundled[1] == serving.DRAFT_SLOTS["eagle"] and "assets/drafts/smollm2-eagle-head.safetensors" in bundled[0]
    assert other[1] == serving.DRAFT_SLOTS["classic"] and "is a file or folder of the machine that ran it" in other[0]
    assert all((DRAFTS / name).is_file() for name in BUNDLED_DRAFTS.values())     # the names it knows are shipped


def test_no_tree_says_so_and_other_drafters_are_named():
    ar = trace_of([{"parents": [], "rank": [], "tokens": []}], drafter="none")
    assert "drafted no tree" in serving.export_markdown(ar, "run", 25)
    text = serving.export_markdown(trace_of([], drafter="recycling"), "chain", 4)
    assert "no speculative method for the recycling drafter" in text
    assert "no speculative algorithm for the recycling drafter" in text and "```" not in text
    assert "`opttree export-tree` refuses it too" in text       # no command line the CLI would refuse


def test_the_default_size_is_the_runs_budget_or_its_median_tree():
    assert serving.default_nodes(trace_of([], nodes=60)) == 60
    auto = trace_of([step_of([(0,)] * 1), step_of(EAGLE_25[:5]), step_of(EAGLE_25[:7])], nodes=0)
    assert serving.default_nodes(auto) == 5
    assert serving.default_nodes(None) == 25


def table_of(speedups: dict) -> list[dict]:
    """A model table from {batch: {nodes: speedup}} (tokens/s = 10 × speedup)."""
    return [{"batch": b, "nodes": n, "speedup": s, "tokens_per_s": 10 * s} for b, row in speedups.items()
            for n, s in row.items()]


def test_a_modelled_gain_inside_the_models_error_is_called_even_not_paying():
    """The shipped page read "speculation pays up to B = 4" for a 1-node tree modelled at ×1.016 there, while its
    own checks find the model's time per step 6-19 % optimistic (failed before). A gain up to NEAR_EVEN is named
    with its size and called even; the batch sizes where a tree pays are those beyond it."""
    from opttree.engine.batch_verdict import NEAR_EVEN

    assert 1 < NEAR_EVEN < 1.1
    best = {1: {"batch": 1, "nodes": 4, "speedup": 1.62}, 2: {"batch": 2, "nodes": 4, "speedup": 1.19},
            4: {"batch": 4, "nodes": 1, "speedup": 1.016}, 8: {"batch": 8, "nodes": 0, "speedup": 1.0}}
    text = serving.batch_summary(best)
    assert "pays up to B = 2 and stops paying from B = 4" in text, text
    assert "×1.02 at B = 4 (n = 1): within 5 % of AR" in text and "so even" in text
    assert "so even" not in serving.batch_summary({**best, 4: {"batch": 4, "nodes": 1, "speedup": 1.07}})
    nothing = serving.batch_summary({1: {"batch": 1, "nodes": 2, "speedup": 1.03}})
    assert "no tree pays" in nothing and "×1.03 at B = 1 (n = 2)" in nothing


def test_the_chart_stars_each_batch_sizes_best_and_the_sentence_says_where_it_stops_paying():
    table = table_of({1: {0: 1.0, 4: 1.6, 25: 1.9}, 4: {0: 1.0, 4: 1.2, 25: 0.9}, 16: {0: 1.0, 4: 0.8, 25: 0.5}})
    best = {1: table[2], 4: table[4], 16: table[6]}
    fig = serving.speedup_figure(table, best, "Test CPU")
    assert [t.name for t in fig.data] == ["B = 1", "B = 4", "B = 16", "best n for that B"]
    assert list(fig.data[-1].x) == [25, 4, 0] and "modelled" in fig.layout.title.text
    sizes = list(fig.data[-1].marker.size)                         # stars on one point nest, the later on top
    assert sizes == sorted(sizes, reverse=True) and len(set(sizes)) == 3
    text = serving.batch_summary(best)
    assert "pays up to B = 4" in text and "from B = 16" in text and "B = 16: AR" in text
    # measured costs are noisy: a tree may pay again at a larger batch; the sentence names both sides
    gap = {**best, 8: {"batch": 8, "nodes": 0, "speedup": 1.0}, 16: {"batch": 16, "nodes": 1, "speedup": 1.08}}
    text = serving.batch_summary(gap)
    assert "pays at B = 1, 4, 16 and not at B = 8" in text and "up to" not in text
    empty = serving.speedup_figure([], {})
    assert not empty.data and "Measure" in empty.layout.annotations[0].text
    assert "not a measured batched run" in serving.MODEL_NOTE


@pytest.mark.parametrize("choice", [c for _, c in serving.EXPORT_CHOICES if c != "run"])
def test_every_shape_exports_a_rank_tree(choice):
    paths, _ = serving.export_paths(trace_of([]), choice, 25)
    assert 0 < len(paths) <= 25 and rank_paths(step_of(paths)) == paths


def cli_line(text: str) -> str:
    return next(line for line in text.splitlines() if line.startswith("opttree export-tree"))


def test_the_command_line_exports_the_runs_own_method_and_drafter():
    """"This run's trees" names the run's method (failed before: every run printed --method opt-tree), a
    method and drafter `export-tree` takes, and the run's max depth and target where they differ from the
    CLI's defaults."""
    for method in ("sequoia", "binary", "chain", "eagle-static"):
        paths = static_paths(method, 12, 10, DEFAULT_ACCEPTANCE)
        line = cli_line(serving.export_markdown(trace_of([step_of(paths)], method=method), "run", 12))
        assert f"--method {method} --nodes {len(paths)} --drafter eagle" in line
    lookup = trace_of([step_of([(0,), (0, 0)])], method="chain", drafter="lookup", max_depth=6, target="org/other")
    line = cli_line(serving.export_markdown(lookup, "run", 2))
    assert line.endswith("--method chain --nodes 2 --drafter lookup --max-depth 6 --target org/other")
    for method in ("eagle-dynamic", "tr-static"):      # shapes export-tree has no --method for
        text = serving.export_markdown(trace_of([step_of(EAGLE_25)], method=method), "run", 25)
        assert "opttree export-tree --format" not in text and f"has no --method {method}" in text
    ar = trace_of([], method="ar", drafter="none")      # an AR run's export of a shape: the CLI's default drafter
    assert cli_line(serving.export_markdown(ar, "binary", 6)).endswith("--method binary --nodes 6 --drafter eagle")


def test_a_method_the_command_line_lacks_is_named_as_text():
    """An imported trace's method is free text: the panel's Markdown names it, never renders it (an image there
    would be fetched by the browser of whoever opened the Serving tab)."""
    method = "![x](https://example.com/p.png) *y*"
    text = serving.export_markdown(trace_of([step_of([(0,), (0, 0)])], method=method), "run", 2)
    assert "![x](" not in text and "*y*" not in text
    assert "has no --method \\!\\[x\\]\\(https://example.com/p.png\\) \\*y\\*" in text


def test_the_downloaded_notes_name_the_acceptance_source_as_it_is():
    """Download saves the notes as JSON, not Markdown: an imported run's acceptance source reads there as the
    trace wrote it, and the panel's Markdown escapes it."""
    trace = trace_of([], acceptance_by_rank=[0.6, 0.15, 0.05], acceptance_source="my_card (v2)")
    assert "(my_card (v2))" in json.loads(serving.export_json(trace, "sequoia", 12))["notes"][0]
    assert "\\(my\\_card \\(v2\\)\\)" in serving.export_markdown(trace, "sequoia", 12)


def test_best_sizes_on_one_point_nest_in_batch_order():
    """Each later batch's star 4 px smaller, on top (style.nested_star_sizes, as Compare's auto stars)."""
    table = [{"batch": b, "nodes": 0, "speedup": 1.0, "tokens_per_s": 10.0} for b in (1, 4, 16, 64)]
    best = {r["batch"]: r for r in table}                        # every batch's best is AR: one point
    assert list(serving.speedup_figure(table, best).data[-1].marker.size) == [26, 22, 18, 14]
    assert list(serving.speedup_figure(table[:1], {1: table[0]}).data[-1].marker.size) == [14]


def test_sequoia_without_a_recorded_vector_says_the_command_line_reads_the_drafts_card():
    """Failed before: with no run (or after AR) the panel drew Sequoia's tree for the default prior and offered the
    command line as "the same", which reads the eagle draft's card and gives another tree."""
    needle = "reads the draft's card"
    assert needle in serving.export_markdown(None, "sequoia", 25)
    assert needle in serving.export_markdown(trace_of([], method="ar", drafter="none"), "sequoia", 25)
    recorded = trace_of([], acceptance_by_rank=[0.6, 0.15, 0.05], acceptance_source="card")
    assert needle not in serving.export_markdown(recorded, "sequoia", 25)
    assert needle not in serving.export_markdown(trace_of([], drafter="lookup"), "sequoia", 25)   # prior on both sides
    assert needle not in serving.export_markdown(None, "binary", 6)


@pytest.mark.parametrize("drafter, draft, differs", [("eagle", "smollm2-eagle-head.safetensors", True),
                                                     ("classic", "self", False), ("eagle", "random", False)])
def test_the_sequoia_line_says_the_command_lines_tree_can_differ_only_where_it_can(drafter, draft, differs):
    """With no vector recorded, the panel's Sequoia tree is the default prior's. The command line reads the draft's
    card: the bundled draft's has one, so its tree can differ; the line for the app's `self` and `random` pairs
    names a draft with no card, so it draws the panel's tree and the sentence is left out (failed before: said
    for every model drafter)."""
    trace = trace_of([], drafter=drafter, draft=draft, target="smollm2-135m-instruct", max_depth=10)
    text = " ".join(serving.cli_text(trace, "sequoia", static_paths("sequoia", 5, 10, DEFAULT_ACCEPTANCE), ["vllm"]))
    assert "opttree export-tree" in text and ("the command line's tree can differ" in text) == differs


@pytest.mark.parametrize("target, said", [("Qwen 0.5B (local)", True), ("Qwen2.5-0.5B-Instruct", True),
                                          ("/home/me/models/qwen", True), ("Qwen/Qwen2.5-0.5B-Instruct", False),
                                          ("smollm2-135m-instruct", False)])
def test_the_command_line_says_what_its_target_is_where_the_engine_blocks_keep_a_slot(target, said):
    """A server's model is recorded by its public name (a folder's base name or its target_name), which the line's
    --target repeats: export-tree reads it as a folder here or a hub id, so it refused a name such as "Qwen 0.5B
    (local)" and served a base name as a hub id, with no word on the page (failed before). Where the engine blocks
    keep `<target>`, the line says what its --target is and to put one's own folder or hub id there; a hub id and
    the bundled target are named as they are, with no such sentence."""
    text = " ".join(serving.cli_text(trace_of([], drafter="lookup", method="chain", target=target), "chain",
                                     [(0,), (0, 0)], ["vllm"]))
    assert ("put the folder or hub id you serve it from in its place" in text) == said, text
    assert ("--target" in text) == (target != "smollm2-135m-instruct")
