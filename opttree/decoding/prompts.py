"""Prompt text -> token ids: validation, the chat template, and the prompt-length limit; and how a
short run picks its prompts from a set (one per category in turn)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

from opttree.errors import BadInput

T = TypeVar("T")

MAX_PROMPT_CHARS = 20000
MAX_PROMPT_TOKENS = 2048


def clean_prompt(text) -> str:
    if not isinstance(text, str):
        raise BadInput("the prompt must be text.")
    # Lone surrogates (invalid UTF-8 that reached a str) become U+FFFD instead of crashing later.
    text = text.encode("utf-8", errors="surrogatepass").decode("utf-8", errors="replace")
    text = "".join(c for c in text if c in "\n\t" or c.isprintable() or ord(c) > 127)
    if not text.strip():
        raise BadInput("the prompt is empty: type a question or instruction.")
    if len(text) > MAX_PROMPT_CHARS:
        raise BadInput(f"the prompt is too long ({len(text)} characters; limit {MAX_PROMPT_CHARS}).")
    return text


def encode_prompt(tokenizer, text, chat: bool = True, max_tokens: int = MAX_PROMPT_TOKENS) -> list[int]:
    """Token ids for a prompt; the chat template is applied when the tokenizer has one."""
    text = clean_prompt(text)
    if chat and getattr(tokenizer, "chat_template", None):
        enc = tokenizer.apply_chat_template([{"role": "user", "content": text}],
                                            add_generation_prompt=True, return_dict=True)
        ids = list(enc["input_ids"])
    else:
        ids = tokenizer(text)["input_ids"]
    if len(ids) > max_tokens:
        raise BadInput(f"the prompt is too long ({len(ids)} tokens; limit {max_tokens}).")
    return [int(i) for i in ids]


def round_robin(items: Iterable[T], category: Callable[[T], str], limit: int | None = None,
                file_order: bool = False) -> list[T]:
    """`items` taken one per category in turn (categories in order of first appearance, file order
    within each), at most `limit` (None: all of them), so a short run covers every category instead of
    only the first one in the file; `file_order` returns the ones taken in the items' own order."""
    items = list(items)
    by_cat: dict[str, list[T]] = {}
    for item in items:
        by_cat.setdefault(category(item), []).append(item)
    rows = [row[i] for i in range(max(map(len, by_cat.values()), default=0)) for row in by_cat.values()
            if i < len(row)]
    rows = rows if limit is None else rows[:max(limit, 0)]
    if file_order:
        taken = {id(item) for item in rows}
        rows = [item for item in items if id(item) in taken]
    return rows
