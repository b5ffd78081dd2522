"""Spec-Bench's public questions (opttree/train/spec_bench.py): the pinned file is checked before any
figure is read on it, and each subset holds the questions its rule names, independent of any result."""

from __future__ import annotations

import hashlib
import json

import pytest

from opttree import paths
from opttree.bench.prompts import read_prompts
from opttree.errors import BadInput
from opttree.train import spec_bench as S
from opttree.train.card import main as card_main


def _questions() -> list[dict]:
    """A small file in Spec-Bench's layout: MT-bench's categories (two each), then the five other tasks."""
    qs, qid = [], 81
    for cat in S.MT_BENCH:
        for i in range(2):
            qs.append({"question_id": qid, "category": cat, "turns": [f"{cat} question {i}", "second turn"]})
            qid += 1
    for task in S.TASKS[1:]:
        for i in range(3):
            words = [task, "passage"] + [f"{task}{i}w{j}" for j in range(8)]     # runs of five no other shares
            qs.append({"question_id": qid, "category": task, "turns": [" ".join(words)]})
            qid += 1
    return qs


def _pinned(tmp_path, monkeypatch, questions=None):
    path = tmp_path / "question.jsonl"
    data = "".join(json.dumps(q) + "\n" for q in (questions or _questions())).encode()
    path.write_bytes(data)
    monkeypatch.setitem(S.SOURCE, "sha256", hashlib.sha256(data).hexdigest())
    return path


def test_the_file_must_be_there_and_be_the_pinned_one(tmp_path, monkeypatch):
    with pytest.raises(BadInput, match="no Spec-Bench question file .*raw.githubusercontent.com/hemingkx/Spec-Bench"):
        S.read(tmp_path / "missing.jsonl")
    path = _pinned(tmp_path, monkeypatch)
    assert [q["question_id"] for q in S.read(path)] == [q["question_id"] for q in _questions()]
    path.write_text(path.read_text() + json.dumps({"question_id": 999, "category": "qa", "turns": ["x"]}) + "\n")
    with pytest.raises(BadInput, match="not the pinned Spec-Bench question file"):
        S.read(path)


def test_each_subset_holds_what_its_rule_names_in_the_card_format():
    qs = _questions()
    mt = S.subset(qs, "mt-bench")
    assert [q["question_id"] for q in mt] == list(range(81, 97))
    assert [q["category"] for q in mt[:3]] == ["writing", "writing", "roleplay"]
    assert all(len(q["turns"]) == 1 for q in mt)            # first turns only, as the cards measure
    # a few of them: one per category in turn, in file order (not the first five, all writing)
    assert [q["question_id"] for q in S.subset(qs, "mt-bench", per_task=5)] == [81, 83, 85, 87, 89]

    long = S.subset(qs, "long", per_task=2)
    assert [(q["question_id"], q["category"]) for q in long] == [
        (100, "summarization"), (101, "summarization"), (109, "rag"), (110, "rag")]

    mixed = S.subset(qs, "mixed", per_task=3)
    assert [q["category"] for q in mixed] == [t for t in S.TASKS for _ in range(3)]
    # within MT-bench one question per category in turn, not the first three of writing
    assert [q["question_id"] for q in mixed[:3]] == [81, 83, 85]
    assert len(S.subset(qs, "mixed", per_task=0)) == len(qs)
    with pytest.raises(BadInput, match="unknown Spec-Bench subset"):
        S.subset(qs, "everything")
    with pytest.raises(BadInput, match="per_task"):
        S.subset(qs, "long", per_task=-1)


def test_overlap_counts_shared_runs_of_five_words_and_names_near_copies():
    qs = _questions()
    rag1, qa2 = (next(q["turns"][0].split() for q in qs if q["question_id"] == i) for i in (110, 105))
    texts = ["nothing in common here at all",
             "please read: " + " ".join(rag1[:6]) + " and more",     # 2 of rag 1's 6 runs of five words
             " ".join(qa2)]                                             # all of qa 2's runs
    found = S.overlap(qs, texts)
    assert found["rag"] == {"questions": 3, "sharing_a_run": 1, "near_copies": []}
    assert found["qa"] == {"questions": 3, "sharing_a_run": 1, "near_copies": [105]}
    assert found["mt_bench"]["sharing_a_run"] == 0 and found["mt_bench"]["questions"] == 16
    assert S.overlap(qs, texts[1:2], near=0.3)["rag"]["near_copies"] == [110]
    assert not S.overlap(qs, ["writing question 0"])["mt_bench"]["sharing_a_run"]   # four words: no run


def test_the_cli_writes_a_prompt_file_the_bench_reads(tmp_path, monkeypatch):
    path = _pinned(tmp_path, monkeypatch)
    out = tmp_path / "sub" / "long.jsonl"
    S.main(["--questions", str(path), "--subset", "long", "--per-task", "1", "--out", str(out)])
    prompts = read_prompts(out)
    assert [(p.id, p.category) for p in prompts] == [("100", "summarization"), ("109", "rag")]
    with pytest.raises(SystemExit, match="error: no Spec-Bench question file"):
        S.main(["--questions", str(tmp_path / "none.jsonl"), "--subset", "long", "--out", str(out)])


def test_the_card_refuses_a_public_set_it_cannot_pin_before_loading_a_model(tmp_path):
    bad = tmp_path / "question.jsonl"
    bad.write_text(json.dumps({"question_id": 1, "category": "writing", "turns": ["hi"]}) + "\n")
    with pytest.raises(SystemExit, match="error: .*not the pinned"):
        card_main(["--kind", "head", "--draft", str(tmp_path / "d.safetensors"), "--set", "public",
                   "--questions", str(bad)])


@pytest.mark.parametrize("name", ["smollm2-eagle-head", "smollm2-classic", "smollm2-early-exit"])
def test_each_shipped_card_records_its_public_reading_on_the_pinned_file(name):
    """The cards' tau_public: MT-bench's 80 first turns of the pinned file, and τ is what the per-prompt
    rows add up to (committed tokens over target forwards), so a reading on another file or subset,
    or an edited figure, fails here."""
    card = json.loads((paths.DRAFTS / f"{name}.json").read_text())
    public = card["tau_public"]
    assert public["source"] == {**S.SOURCE, "subset": "mt-bench, first turns"}
    rows = public["per_prompt"]
    assert [r["question_id"] for r in rows] == list(range(81, 161))
    assert {r["category"] for r in rows} == set(S.MT_BENCH)
    tokens, steps = sum(r["new_tokens"] for r in rows), sum(r["steps"] for r in rows)
    assert public["tau"] == round(tokens / steps, 3) and public["n_prompts"] == 80
    for cat in S.MT_BENCH:          # the category figures add up from the same rows
        own = [r for r in rows if r["category"] == cat]
        assert public["tau_by_category"][cat] == round(sum(r["new_tokens"] for r in own)
                                                       / sum(r["steps"] for r in own), 3)
    assert public["tree_temperature"] == card["tree_temperature"]     # read at the card's own settings
    assert public["decode"]["nodes"] == 60 and public["decode"]["threshold"] == 0.5


def test_round_robin_takes_one_per_category_in_turn_and_stops_at_the_limit():
    """The one rule the bench's `--limit`, the cards' eval subsets and the mixed subset share."""
    from opttree.decoding.prompts import round_robin

    items = [("a", 1), ("a", 2), ("a", 3), ("b", 1), ("c", 1), ("c", 2)]
    cat = lambda item: item[0]   # noqa: E731
    assert round_robin(items, cat) == [("a", 1), ("b", 1), ("c", 1), ("a", 2), ("c", 2), ("a", 3)]
    assert round_robin(items, cat, 4) == [("a", 1), ("b", 1), ("c", 1), ("a", 2)]
    assert round_robin(items, cat, 0) == [] and round_robin([], cat) == []
    assert round_robin(items, cat, 99) == round_robin(items, cat)
    assert round_robin(items, cat, 4, file_order=True) == [("a", 1), ("a", 2), ("b", 1), ("c", 1)]
