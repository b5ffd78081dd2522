"""The long-input set (opttree/assets/prompts/long_input.jsonl): frozen, in the eval set's format, long
pasted passages, disjoint from the training prompts and kept apart from the measured sets."""

from __future__ import annotations

import hashlib
from collections import Counter

from opttree.train.card import eval_questions
from opttree.train.prompt_parts import five_grams, shares_five_words
from opttree.train.prompts import LONG_INPUT_PROMPTS, build_prompts


def test_long_input_set_is_frozen():
    # Written once, before any run read it; editing a line would change what every reported
    # tau_long_input means. A new set is a new file.
    data = LONG_INPUT_PROMPTS.read_bytes()
    assert hashlib.sha256(data).hexdigest() == "0bb847cf0f677044e927cc4d75a5c1ba5f6cd8c54145ad9eeeb466bf68ca3a23"
    assert len(data) == 44544


def test_long_input_set_has_long_passages_in_the_eval_format():
    qs = eval_questions(LONG_INPUT_PROMPTS)
    assert [q["question_id"] for q in qs] == list(range(1, 19))
    assert Counter(q["category"] for q in qs) == {"summarise": 7, "question": 7, "translate": 4}
    for q in qs:
        assert set(q) == {"question_id", "category", "turns"} and len(q["turns"]) == 1
        instruction, passage = q["turns"][0].split("\n\n", 1)
        assert instruction.strip() and 300 <= len(passage.split()) <= 1000


def test_long_input_set_is_disjoint_from_training_and_measured_prompts():
    train = {p.strip().lower() for p in build_prompts()}
    evals = {t.strip().lower() for q in eval_questions() for t in q["turns"]}
    for q in eval_questions(LONG_INPUT_PROMPTS):
        text = q["turns"][0]
        assert text.strip().lower() not in train and text.strip().lower() not in evals
        assert not shares_five_words(text)     # no run of five words with the eval or final set
    grams = set().union(*(five_grams(p) for p in build_prompts()))
    shared = sum(len(five_grams(q["turns"][0]) & grams) for q in eval_questions(LONG_INPUT_PROMPTS))
    assert shared <= 3     # written apart from the training prompts: a few stock phrases at most
