"""The generated text as the page shows it: a character split over byte-level tokens (emoji, Arabic,
accents), which each token decoded alone reads as U+FFFD, shows whole (viz/text_view.py)."""

import re

from test_viz import make_step
from tiny import ByteToyTokenizer

from opttree.engine.recording import TokenTexts
from viz.text_view import text_html
from viz.tree_figure import root_context


def byte_level_trace(chunks: list[list[bytes]]) -> dict:
    """A trace of a byte-level tokenizer's tokens (each step commits its chunk's tokens, the last the bonus),
    each token's text decoded alone as the engine records it, so a split character reads U+FFFD."""
    steps = []
    for chunk in chunks:
        texts = [b.decode("utf-8", "replace") for b in chunk]
        step = make_step([-1, *range(len(chunk) - 2)], [0.9] * (len(chunk) - 1), texts=texts[:-1],
                         accepted=list(range(len(chunk) - 1)))
        step.update(bonus_text=texts[-1], committed_text=b"".join(chunk).decode("utf-8", "replace"))
        steps.append(step)
    return {"steps": steps, "prompt": "Répète", "meta": {},
            "output_text": b"".join(b for chunk in chunks for b in chunk).decode("utf-8", "replace")}


def test_characters_split_over_byte_level_tokens_show_whole():
    """An emoji split over byte-level tokens (and over two steps) shows as the emoji on its first token, not
    as one U+FFFD per token (failed before: the text strip showed each token's own broken text)."""
    thumb = "👍🏽".encode()       # 8 bytes: two characters
    trace = byte_level_trace([[b"Hi", b" ", thumb[:3]], [thumb[3:6], thumb[6:], b"\n"], [b"ok", b"!"]])
    html_text = text_html(trace)
    assert "\ufffd" not in html_text and "👍🏽" in html_text and "Hi" in html_text
    assert html_text.index("👍🏽") < html_text.index('data-step="1"')       # on the run's first token (step 1)
    assert root_context(trace, 2).endswith("Hi 👍🏽")
    broken = {**trace, "output_text": ""}            # a live run before its end: the tokens' own texts
    assert "\ufffd" in text_html(broken)


def test_mending_never_drops_a_character_and_keeps_a_cut_last_one():
    """A run of broken tokens is mended only where the whole output lines up: a repeated character after
    it (日日) must not lose one to an early match (the tokens then keep their own texts), and an output cut
    at the token limit inside a character keeps its last U+FFFD without unmending the emoji before it."""
    from viz.text_view import BROKEN as F
    from viz.text_view import mend

    assert mend([" " + F, F, "日"], " 日日") is None               # the first match would read " 日"
    assert mend(["x", F, F, "y", F], "x😀y" + F) == ["x", "😀", "", "y", F]
    assert mend(["x", F, F, "y"], "x😀y") == ["x", "😀", "", "y"]


def engine_trace(chunks: list[list[bytes]]) -> list[dict]:
    """The trace after each step as this engine records it: each committed token's piece (a character
    whole on the token that completes it) and the bytes label of a character the text so far ends inside."""
    tokenizer = ByteToyTokenizer()
    tokenizer.vocab = [b for chunk in chunks for b in chunk]
    texts, steps, ids, out = TokenTexts(tokenizer), [], 0, []
    for chunk in chunks:
        tokens = list(range(ids, ids + len(chunk)))
        ids += len(chunk)
        step = make_step([-1, *range(len(chunk) - 2)], [0.9] * (len(chunk) - 1),
                         texts=[texts(t) for t in tokens[:-1]], accepted=list(range(len(chunk) - 1)))
        pieces, pending = texts.commit(tokens)
        step.update(bonus_text=texts(tokens[-1]), committed=tokens, pieces=pieces,
                    **({"pending": pending} if pending else {}))
        steps.append(step)
        output = tokenizer.decode([t for s in steps for t in s["committed"]])
        out.append({"steps": list(steps), "prompt": "", "meta": {}, "output_text": output})
    return out


def test_the_live_strip_shows_a_character_whole_once_its_last_byte_is_committed():
    """Mid-run, a character whose bytes are not all committed yet shows its bytes label, and the step
    that commits its last byte shows it whole, on the token that completes it (failed before: the strip
    showed U+FFFD while the text so far ended inside the character)."""
    smile = "😀".encode()
    first, second = engine_trace([[b"Hi", b" " + smile[:2]], [smile[2:], b"!"]])
    shown = [re.sub("<[^>]+>", "", text_html(t)).split("click a token to see its step")[1] for t in (first, second)]
    assert shown == ["Hi ⟨F0 9F⟩", "Hi 😀!"]
    done = text_html(second)
    assert done.index("😀") > done.index('data-step="1"')        # on step 2's token that completed it


class UnreadVocabulary(ByteToyTokenizer):
    """A byte-level tokenizer whose vocabulary entries this reader cannot read (a remote-code tokenizer
    whose `convert_ids_to_tokens` gives bytes, or none): its split characters get no bytes."""

    convert_ids_to_tokens = None


def test_pieces_whose_bytes_were_not_found_are_still_mended_from_the_output():
    """Where the engine found no bytes for a token, its piece is its own text, U+FFFD: the strip mends it
    from the output text as it mends a trace without pieces (failed before: a trace with pieces skipped the
    mending, so a finished run of such a tokenizer showed U+FFFD where an older engine's showed 😀), and
    the last step's pending bytes label still follows."""
    smile = "😀".encode()
    tokenizer = UnreadVocabulary()
    tokenizer.vocab = [b"Hi", b" " + smile[:2], smile[2:], b"!"]
    texts = TokenTexts(tokenizer)
    step = make_step([-1, 0, 1], [0.9] * 3, texts=[texts(t) for t in range(3)], accepted=[0, 1, 2])
    pieces, pending = texts.commit([0, 1, 2, 3])
    step.update(bonus_text=texts(3), committed=[0, 1, 2, 3], pieces=pieces)
    trace = {"steps": [step], "prompt": "", "meta": {}, "output_text": tokenizer.decode([0, 1, 2, 3])}
    shown = re.sub("<[^>]+>", "", text_html(trace)).split("click a token to see its step")[1]
    assert pending == "" and shown == "Hi 😀!"
    live = engine_trace([[b"Hi", b" " + smile[:2]], [smile[2:], b"!"]])[0]    # ends inside 😀 after step 1
    assert re.sub("<[^>]+>", "", text_html(live)).endswith("Hi ⟨F0 9F⟩")
