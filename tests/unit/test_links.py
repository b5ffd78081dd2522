"""Deep links: what a URL may ask for, checked; a link made by the page reopens the same run, its node
budget (auto or a number) included."""

from __future__ import annotations

from types import SimpleNamespace
from urllib.parse import parse_qs, urlparse

from opttree.config import app_defaults
from ui.controls import NODES_MODE, settings_from
from ui.links import LABEL, PROMPT_BYTES, copy_link, fits, link_for, parse_link
from viz.lessons import PRESETS


def query_of(url: str) -> dict:
    return {k: v[0] for k, v in parse_qs(urlparse(url).query).items()}


def test_a_preset_link_sets_its_prompt_settings_and_budget_and_runs():
    link = parse_link({"preset": "1", "step": "3"})
    assert link["prompt"] == PRESETS[1]["prompt"] and link["run"] and link["step"] == 3 and link["lesson"] == 1
    # The lesson's own fixed budget: the slider's n and the switch at fixed (the auto default would ignore it).
    assert link["settings"]["nodes"] == PRESETS[1]["nodes"] == 60 and link["settings"][NODES_MODE] == "fixed"
    assert settings_from(link["settings"])["nodes"] == 60 and link["tab"] == "explore"
    by_name = parse_link({"preset": PRESETS[2]["name"].upper()})
    assert by_name["prompt"] == PRESETS[2]["prompt"]
    assert settings_from(by_name["settings"])["nodes"] == PRESETS[2]["nodes"]
    assert "model" not in link                                  # a lesson on the default pair
    own = next(i for i, p in enumerate(PRESETS) if p.get("model"))
    assert parse_link({"preset": str(own)})["model"] == PRESETS[own]["model"]   # a lesson on its own pair
    auto = next(i for i, p in enumerate(PRESETS) if p["nodes"] == 0)
    settings = parse_link({"preset": str(auto)})["settings"]
    assert settings[NODES_MODE] == "auto" and "nodes" not in settings         # the slider's n is left alone


def test_a_number_of_nodes_fixes_the_budget_and_auto_frees_it():
    for query in ({"nodes": "25", "step": "2"}, {"tab": "compare", "nodes": "25"}):
        link = parse_link(query)
        assert link["settings"] == {"nodes": 25, NODES_MODE: "fixed"}, query
        assert settings_from(link["settings"])["nodes"] == 25
    assert parse_link({"tab": "compare", "nodes": "25"})["tab"] == "compare"
    for spelled in ("auto", "AUTO", "0"):
        assert parse_link({"nodes": spelled})["settings"] == {NODES_MODE: "auto"}
    # An explicit budget overrides the lesson's own.
    assert settings_from(parse_link({"preset": "1", "nodes": "auto"})["settings"])["nodes"] == 0
    assert parse_link({"present": "1"})["present"] and "present" not in parse_link({"present": "no"})


def test_bad_values_fall_back_instead_of_breaking_the_page():
    link = parse_link({"nodes": "9999", "temperature": "nan", "method": "<script>", "tab": "nowhere",
                       "preset": "99", "colour": "pink", "step": "-2", "max_depth": "5", "bogus": "1"})
    assert link["settings"] == {"max_depth": 5} and "tab" not in link and "colour" not in link
    assert "step" not in link and "prompt" not in link and not link.get("run") and "lesson" not in link
    # Digits int() refuses ('²' passes str.isdigit; more than 4,300 digits) broke the page's load with an error.
    for junk in ("²", "9" * 5000):
        link = parse_link({"step": junk, "preset": junk})
        assert "step" not in link and "lesson" not in link and not link.get("run")


def test_a_method_the_menu_does_not_offer_leaves_the_menu_alone():
    from ui.controls import METHOD_CHOICES, control_values

    assert "ar" not in {value for _, value in METHOD_CHOICES}          # Explore draws trees: no AR in its menu
    assert parse_link({"method": "ar", "max_depth": "5"})["settings"] == {"max_depth": 5}
    assert parse_link({"method": "binary"})["settings"] == {"method": "binary"}
    assert control_values({"method": "ar", "nodes": 25}) == {"nodes": 25, NODES_MODE: "fixed"}


def copy_link_url(*args) -> str:
    box = copy_link(*args)
    assert box.label == LABEL
    return box.value


def test_a_prompt_longer_than_a_link_carries_is_left_out_and_the_label_says_so():
    """A cut prompt would open a different run: the link keeps the settings, and the label says why."""
    page = SimpleNamespace(settings={"nodes": None, "max_new_tokens": None, NODES_MODE: None})
    request = SimpleNamespace(headers={"referer": "http://host:1/"})
    for long in ("x" * (PROMPT_BYTES + 1), "é" * (PROMPT_BYTES // 5)):      # é: 6 bytes encoded
        ran = {"model": "smollm2-eagle", "prompt": long, "settings": {**app_defaults(), "nodes": 0}}
        box = copy_link(page, request, ran, long, "smollm2-eagle", "log_p_hat", 3, False, 60, 32, "auto")
        query = query_of(box.value)
        assert {"prompt", "run", "step"}.isdisjoint(query) and query["nodes"] == "auto"
        assert "longer than a link carries" in box.label and f"{len(long):,} characters" in box.label
    fitting = "x" * PROMPT_BYTES
    assert fits(fitting) and parse_link(query_of(link_for("http://h/", "explore", fitting, "m", "", 2, {})))[
        "prompt"] == fitting


def test_a_copied_link_round_trips_with_its_budget():
    for nodes, written in ((25, "25"), (0, "auto")):
        settings = {**app_defaults(), "nodes": nodes, "method": "binary", "temperature": 0.5, "seed": 7}
        url = link_for("http://127.0.0.1:7860/", "explore", "Hi & bye?", "smollm2-eagle", "q", 4, settings,
                       present=True)
        query = query_of(url)
        assert "threshold" not in query and query["nodes"] == written    # defaults left out, the budget never
        link = parse_link(query)
        assert link["prompt"] == "Hi & bye?" and link["colour"] == "q" and link["step"] == 4 and link["run"]
        assert link["present"] and link["model"] == "smollm2-eagle"
        assert settings_from(link["settings"]) == settings_from({**app_defaults(), **settings})


def test_copy_link_writes_what_ran_not_what_the_controls_say_now():
    page = SimpleNamespace(settings={"nodes": None, "max_new_tokens": None, NODES_MODE: None})
    request = SimpleNamespace(headers={"referer": "http://host:1/?old=1"})
    ran = {"model": "smollm2-eagle", "prompt": "ran", "settings": {**app_defaults(), "nodes": 0}}
    url = copy_link_url(page, request, ran, "edited since", "smollm2-classic", "log_p_hat", 3, False, 60, 32, "fixed")
    query = query_of(url)
    assert url.startswith("http://host:1/?") and query["prompt"] == "ran" and query["nodes"] == "auto"
    assert query["model"] == "smollm2-eagle" and query["step"] == "3" and "present" not in query
    # Step 1 is written too: a link without a step lands on the run's last tree, not on step 1.
    assert query_of(copy_link_url(page, request, ran, "", "m", "log_p_hat", 1, False, 60, 32, "auto"))["step"] == "1"
    # Before any run: the controls, the switch deciding the budget (an auto run never writes nodes=60).
    query = query_of(copy_link_url(page, request, {}, "typed", "smollm2-eagle", "log_p_hat", 1, True, 60, 32, "auto"))
    assert query["prompt"] == "typed" and query["nodes"] == "auto" and query["present"] == "1"
    assert "step" not in query                                      # no run, no step to show
    query = query_of(copy_link_url(page, request, {}, "typed", "smollm2-eagle", "log_p_hat", 1, False, 60, 32, "fixed"))
    assert query["nodes"] == "60"


def test_a_link_with_a_blank_prompt_opens_the_page_without_running():
    """Before any run with the prompt box emptied, Copy link keeps the settings but neither the blank prompt
    nor a run (opened, it ran the page's default prompt instead)."""
    page = SimpleNamespace(settings={"nodes": None, "max_new_tokens": None, NODES_MODE: None})
    request = SimpleNamespace(headers={"referer": "http://host:1/"})
    query = query_of(copy_link_url(page, request, {}, "  ", "smollm2-eagle", "log_p_hat", 1, False, 25, 64, "fixed"))
    assert "prompt" not in query and "run" not in query and query["nodes"] == "25" and query["max_new_tokens"] == "64"
    assert not parse_link(query).get("run")


def test_a_link_sets_only_values_its_control_takes():
    """A link is checked against the range each control takes (a slider's is narrower than the declared
    one): a value past it is ignored, and the run the link starts uses the control's own value."""
    from ui.controls import control_range

    for key, value in (("threshold", "5"), ("max_new_tokens", "300"), ("top_k", "5000"), ("tree_temperature", "3")):
        link = parse_link({key: value, "prompt": "Hi", "run": "1"})
        assert key not in link["settings"] and link["run"], key
    assert control_range("threshold") == (0, 1) and control_range("max_new_tokens") == (1, 256)
    assert control_range("seed") == (0, 2**53) and control_range("method") is None
    inside = parse_link({"threshold": "1", "max_new_tokens": "256", "top_k": "200", "seed": "7", "nodes": "500"})
    assert inside["settings"] == {"threshold": 1.0, "max_new_tokens": 256, "top_k": 200, "seed": 7, "nodes": 500,
                                  NODES_MODE: "fixed"}
