"""bench/int8_drafts.py: each choice of fp32 parts is what the head then runs, and the table pairs
every choice with the first on the same prompts."""

import pytest
import torch
from tiny import tiny_pair

from opttree.bench import int8_drafts as I8
from opttree.nets import few_row_linear as FR

pytestmark = pytest.mark.skipif(not FR._have_int8(), reason="this PyTorch build has no dynamic int8 linear")


def _int8_parts(head) -> dict[str, bool]:
    return {n: m._few_row_pack.int8 for n, m in head.named_modules() if type(m) is torch.nn.Linear}


def test_each_choice_sets_the_heads_kernels(monkeypatch):
    monkeypatch.setenv("OPTTREE_DRAFT_INT8", "1")
    head = tiny_pair("fused").draft_model
    I8.apply(head, "")
    assert all(_int8_parts(head).values()) and head._rows_int8()
    I8.apply(head, "fc, fuse,lm_head")
    parts = _int8_parts(head)
    assert not parts["fc"] and not parts["fuse"] and parts["decoder.layers.0.mlp.down_proj"]
    assert FR.kernel_of(head) == "int8" and not head._rows_int8()
    I8.apply(head, "decoder")
    assert parts != _int8_parts(head) and not any(v for n, v in _int8_parts(head).items() if n.startswith("decoder"))
    I8.apply(head, I8.FP32)
    assert FR.kernel_of(head) == "few-row" and not any(_int8_parts(head).values()) and not head._rows_int8()


def test_unknown_parts_are_refused(monkeypatch):
    monkeypatch.setenv("OPTTREE_DRAFT_INT8", "1")
    head = tiny_pair("eagle").draft_model
    with pytest.raises(SystemExit, match="no part 'fcc'"):
        I8.apply(head, "fcc")
    I8.apply(head, "decoder.layers.0.mlp, lm_head")     # dotted names and the head's LM-head rows
    assert not head.decoder.layers[0].mlp.down_proj._few_row_pack.int8 and not head._rows_int8()
    assert head.decoder.layers[0].self_attn.q_proj._few_row_pack.int8


def test_a_run_on_the_bundled_head_pairs_choices_prompt_by_prompt(smollm, monkeypatch):
    from opttree.drafters.registry import with_drafter

    monkeypatch.setenv("OPTTREE_DRAFT_INT8", "0")   # restored after the test: measure() turns it on
    monkeypatch.setenv("OPTTREE_DRAFT_ROWS", "auto")  # and pins the LM-head rows to fp32
    pair = with_drafter(smollm, "eagle")
    rows = I8.measure(pair, [I8.FP32, "fc,fuse", ""], prompts=2, nodes=3, depth=2, tokens=6, log=lambda _: None)
    assert list(rows) == [I8.FP32, "fc,fuse", ""] and pair.draft_model.rows_kernel() in ("fp32", "int8")
    for r in rows.values():
        assert len(r["tau"]) == 2 and all(1.0 <= t <= 3.0 for t in r["tau"]) and all(ms > 0 for ms in r["draft_ms"])
    text = I8.table(rows)
    assert "| all (no int8) |" in text and "| fc, fuse |" in text and "| none (all int8) |" in text
    assert text.splitlines()[2].split("|")[3].strip() == "+0.000 ± 0.000"     # the first against itself
