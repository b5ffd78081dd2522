"""A token's raw bytes, and a readable label for bytes that are only part of a character.

A byte-level tokenizer (GPT-2's BPE, which SmolLM2, Llama 3 and Qwen use; SentencePiece with byte
fallback) may split one character over several tokens: an emoji is 4 UTF-8 bytes, a CJK or Arabic
letter 2 or 3, an accented letter 2. Each such token decoded alone reads U+FFFD ("�"), so two different
tokens look the same. `token_bytes` finds what the token really holds, from its vocabulary entry:

- GPT-2 byte-level vocabularies spell each byte as one printable character (`byte_decoder` inverts
  that map: "ðŁĺ" is F0 9F 98);
- SentencePiece spells a byte-fallback token "<0xF0>".

`bytes_label` writes bytes as text with each run of bytes that is not a whole character in hex,
between angle brackets: b" \\xf0\\x9f\\x98" reads " ⟨F0 9F 98⟩" (the start of 😀, after a space).
"""

from __future__ import annotations

import re
from functools import lru_cache

_BYTE_TOKEN = re.compile(r"<0x([0-9A-Fa-f]{2})>")
_ESCAPED = re.compile("[\udc80-\udcff]+")     # bytes `surrogateescape` could not decode, one per byte


@lru_cache(maxsize=1)
def byte_decoder() -> dict[str, int]:
    """GPT-2's byte-level alphabet inverted: each of the 256 characters its vocabulary spells bytes with
    → that byte (the printable Latin-1 bytes stand for themselves, the others are shifted past 255)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars, extra = {}, 0
    for b in range(256):
        if b in printable:
            chars[chr(b)] = b
        else:
            chars[chr(256 + extra)] = b
            extra += 1
    return chars


def token_bytes(tokenizer, token: int, text: str) -> bytes | None:
    """The bytes `token` stands for, read from its vocabulary entry; None where the tokenizer has no
    entry this reads (no `convert_ids_to_tokens`, an entry of neither kind) or where the bytes found do
    not decode to `text`, the token decoded alone (a tokenizer that spells its vocabulary otherwise)."""
    convert = getattr(tokenizer, "convert_ids_to_tokens", None)
    if convert is None:
        return None
    try:
        piece = convert(int(token))
    except (IndexError, KeyError, TypeError, ValueError, OverflowError):
        return None
    if not isinstance(piece, str) or not piece:
        return None
    whole = _BYTE_TOKEN.fullmatch(piece)
    decoder = byte_decoder()
    if whole:
        data = bytes([int(whole.group(1), 16)])
    elif all(c in decoder for c in piece):
        data = bytes(decoder[c] for c in piece)
    else:
        return None
    decoded = data.decode("utf-8", "replace")
    # A SentencePiece decoder drops the leading space of a token decoded alone.
    return data if text in (decoded, decoded.lstrip(" ")) else None


def bytes_label(data: bytes) -> str:
    """`data` as readable text: whole characters as themselves, each run of other bytes as hex between
    angle brackets (b"\\xf0\\x9f" → "⟨F0 9F⟩", b"a\\xc3" → "a⟨C3⟩")."""
    text = data.decode("utf-8", "surrogateescape")
    return _ESCAPED.sub(lambda m: "⟨" + " ".join(f"{ord(c) - 0xDC00:02X}" for c in m.group()) + "⟩", text)
