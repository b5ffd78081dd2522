"""Each symbol a lesson's caption uses is defined, in bold, in the Learn prose a student can look up.

A symbol counts as used, or as defined, only as a whole token: bounded by characters that are not
letters, so the q inside "sequence" is no use of q, and a bold "**query**" no definition of it."""

from __future__ import annotations

import re

from viz import lessons

# The Latin-letter symbols the captions and Learn speak of; every Greek letter a caption has is one too.
LATIN_SYMBOLS = ("p̂", "E(A)", "q", "n")
LETTER = r"[^\W\d_]"            # a letter in any script (\w without digits and the underscore)


def token(symbol: str) -> str:
    """A pattern for `symbol` as a whole token: no letter right before or right after it."""
    return rf"(?<!{LETTER}){re.escape(symbol)}(?!{LETTER})"


def uses(text: str, symbol: str) -> bool:
    return re.search(token(symbol), text) is not None


def defines(learn: str, symbol: str) -> bool:
    """Whether the Learn prose has `symbol` bold, or at the start of a bold phrase (**E(A) = Σ p̂**)."""
    return re.search(r"\*\*" + token(symbol), learn) is not None


def symbols_used(caption: str) -> set[str]:
    greek = {ch for ch in caption if "\u0370" <= ch <= "\u03ff" and ch.isalpha()}
    return {sym for sym in (*LATIN_SYMBOLS, *greek) if uses(caption, sym)}


def test_a_symbol_counts_only_as_a_whole_token():
    assert not uses("a long sequence of tokens", "q") and not uses("the next token", "n")
    assert uses("q of the top guess", "q") and uses("(q)", "q") and uses("the best n nodes", "n")
    assert uses("E(A) rises", "E(A)") and uses("p̂ drops", "p̂") and uses("δ = 0.9", "δ")
    assert symbols_used("With δ = 0.9 a sequence (α + β grows)") == {"δ", "α", "β"}
    assert defines("the **q** of its token", "q") and defines("**E(A) = Σ p̂** over", "E(A)")
    assert not defines("the **query** of its token", "q") and not defines("**quality**", "q")


def test_each_symbol_a_lesson_caption_uses_is_defined_in_learn():
    used = {sym for p in lessons.PRESETS for sym in symbols_used(p["lesson"])}
    assert used >= {"τ", "p̂", "E(A)", "δ", "q", "n"}, used
    undefined = sorted(sym for sym in used if not defines(lessons.LEARN_TEXT, sym))
    assert not undefined, f"used in a lesson caption but not defined in bold in assets/learn.md: {undefined}"
