"""Deep links: what a URL may ask for, checked; a link made by the page reopens the same run."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

from opttree.config import SETTING_NAMES, app_defaults
from ui.links import link_for, parse_link
from viz.lessons import PRESETS


def test_a_preset_link_sets_its_prompt_and_settings_and_runs():
    link = parse_link({"preset": "1", "step": "3"})
    assert link["prompt"] == PRESETS[1]["prompt"] and link["run"] and link["step"] == 3
    assert link["settings"]["nodes"] == PRESETS[1]["nodes"] and link["tab"] == "explore"
    assert parse_link({"preset": PRESETS[2]["name"].upper()})["prompt"] == PRESETS[2]["prompt"]
    assert "model" not in link                                  # a lesson on the default pair
    own = next(i for i, p in enumerate(PRESETS) if p.get("model"))
    assert parse_link({"preset": str(own)})["model"] == PRESETS[own]["model"]   # a lesson on its own pair


def test_bad_values_fall_back_instead_of_breaking_the_page():
    link = parse_link({"nodes": "9999", "temperature": "nan", "method": "<script>", "tab": "nowhere",
                       "preset": "99", "colour": "pink", "step": "-2", "max_depth": "5", "bogus": "1"})
    assert link["settings"] == {"max_depth": 5} and "tab" not in link and "colour" not in link
    assert "step" not in link and "prompt" not in link and not link.get("run")


def test_a_copied_link_round_trips():
    values = {**app_defaults(), "nodes": 25, "method": "binary", "temperature": 0.5, "seed": 7}
    url = link_for("http://127.0.0.1:7860/", "explore", "Hi & bye?", "smollm2-eagle", "q", 4,
                   *(values[k] for k in SETTING_NAMES))
    query = {k: v[0] for k, v in parse_qs(urlparse(url).query).items()}
    assert "threshold" not in query            # defaults are left out: links stay short
    link = parse_link(query)
    assert link["prompt"] == "Hi & bye?" and link["colour"] == "q" and link["step"] == 4 and link["run"]
    assert link["settings"] == {"nodes": 25, "method": "binary", "temperature": 0.5, "seed": 7}
