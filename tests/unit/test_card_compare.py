"""Two drafts' τ compared prompt by prompt (opttree/train/card.py), the comparison a candidate must
win before it replaces a shipped draft."""

from __future__ import annotations

import json

import pytest

from opttree.train.card import main, paired_difference


def _result(taus: dict) -> dict:
    return {"tau": round(sum(taus.values()) / len(taus), 3),
            "per_prompt": [{"question_id": q, "tau": t} for q, t in taus.items()]}


def test_the_paired_difference_is_per_prompt_over_the_prompts_both_measured():
    base = _result({1: 2.0, 2: 3.0, 3: 2.5, 4: 9.0})
    new = _result({1: 2.5, 2: 2.9, 3: 2.8, 5: 1.0})   # prompt 4 and 5 were measured by one card only
    d = paired_difference(base, new)
    diffs = [0.5, -0.1, 0.3]
    mean = sum(diffs) / 3
    se = (sum((x - mean) ** 2 for x in diffs) / 2 / 3) ** 0.5
    assert d == {"n": 3, "mean": round(mean, 3), "se": round(se, 3), "tau": [base["tau"], new["tau"]],
                 "up": 2, "down": 1}
    assert paired_difference(base, base)["mean"] == 0 and paired_difference(base, base)["up"] == 0
    with pytest.raises(SystemExit, match="two or more prompts"):
        paired_difference(base, _result({1: 1.0}))


def test_the_cli_compares_two_cards_on_the_chosen_set_and_says_what_is_missing(tmp_path, capsys):
    (tmp_path / "base.json").write_text(json.dumps({"tau_eval": _result({1: 2.0, 2: 3.0}),
                                                    "tau_long_input": _result({7: 1.0, 8: 2.0})}))
    (tmp_path / "cand.json").write_text(json.dumps({"tau_long_input": _result({7: 1.5, 8: 2.5})}))
    d = main(["--kind", "head", "--draft", str(tmp_path / "cand.safetensors"), "--compare",
              str(tmp_path / "base.json"), "--set", "long-input"])
    assert d["mean"] == 0.5 and d["up"] == 2 and json.loads(capsys.readouterr().out)["set"] == "long-input"
    with pytest.raises(SystemExit, match=r"no tau_eval in .*cand.json"):
        main(["--kind", "head", "--draft", str(tmp_path / "cand.safetensors"),
              "--compare", str(tmp_path / "base.json")])
