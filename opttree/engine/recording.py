"""What a run keeps for its trace besides the trees: the draft's full distributions at the likeliest
nodes (for the step's top-k rows), the builders' `expand` callback that collects them, and token texts."""

from __future__ import annotations

import codecs

import torch

from opttree.decoding.token_bytes import bytes_label, token_bytes
from opttree.engine.step_timer import StepTimer
from opttree.trace import BROKEN, ROWS_PER_STEP
from opttree.trees.draft_tree import ROOT, DraftTree

DRAFT_ROWS_KEPT = 4 * ROWS_PER_STEP   # full draft distributions held per step for the trace's rows


class DraftRows:
    """The draft's full distribution at the most likely nodes it expanded this step, for the trace's
    top-k rows: at most `keep` rows (the root first, then by p̂), copied out of each layer's output so
    the rest of that output can be freed."""

    def __init__(self, keep: int = DRAFT_ROWS_KEPT):
        self.keep = keep
        self.rows: dict[int, tuple[float, torch.Tensor]] = {}   # grown-tree node -> (p̂, distribution)

    def note(self, grown: DraftTree, nodes: list[int], probs: torch.Tensor) -> None:
        scored = [(grown.p_hat_of(node), node, j) for j, node in enumerate(nodes)]
        kept = sorted([(score, node, None) for node, (score, _) in self.rows.items()] + scored,
                      key=lambda c: -c[0])[: self.keep]
        self.rows = {node: self.rows[node] if j is None else (score, probs[j].clone())
                     for score, node, j in kept}

    def for_tree(self, tree: DraftTree) -> dict[int, torch.Tensor]:
        """The held rows keyed by the final tree's node ids (the root stays -1; a node the draft never
        grew, such as one retrieval fusion added, has origin -1 and no row)."""
        out = {ROOT: self.rows[ROOT][1]} if ROOT in self.rows else {}
        for new, old in enumerate(tree.origin):
            if old != ROOT and old in self.rows:
                out[new] = self.rows[old][1]
        return out


class RecordingExpand:
    """The tree builders' `expand(tree, nodes, k)`: each node's top-k children from the drafter, timed
    as drafting. While the trace still records rows (`rows` given) it asks for the whole
    distributions and keeps the likeliest nodes' rows; otherwise it takes the drafter's fast path."""

    def __init__(self, drafter, timer: StepTimer, rows: DraftRows | None):
        self.drafter, self.timer, self.rows = drafter, timer, rows

    def __call__(self, tree: DraftTree, nodes: list[int], k: int):
        with self.timer.phase("draft"):
            if self.rows is None:
                return self.drafter.top_children(tree, nodes, k)
            probs = self.drafter.distributions(tree, nodes)
            top = torch.topk(probs, min(k, probs.shape[-1]), dim=-1)
        with self.timer.phase("record"):
            self.rows.note(tree, nodes, probs)
        return top.indices.cpu(), top.values.cpu()


class TokenTexts:
    """A run's token texts, cached per token (decoding 500 nodes a step adds up): each token's text
    (`text_of(token)`, as it reads after other text), its bytes label where that text reads U+FFFD (`label`), and the
    committed tokens' pieces, read in order through an incremental UTF-8 decoder (`commit`). Only a
    token whose text reads U+FFFD is decoded from its bytes (a token that follows bytes still waiting for
    the rest of their character ends them as U+FFFD and adds its own text), so each step costs its
    committed tokens, not the output so far."""

    def __init__(self, tokenizer):
        self.tokenizer, self.cache, self.labels, self.raw = tokenizer, {}, {}, {}
        self.anchor: tuple | None = None     # (a plain token, its text), found at the first decode
        self.utf8 = codecs.getincrementaldecoder("utf-8")("replace")

    def __call__(self, token: int) -> str:
        if token not in self.cache:
            self.cache[token] = self._decoded(token)
        return self.cache[token]

    def _decoded(self, token: int) -> str:
        """The token's text as it reads inside a text, not at its start: a SentencePiece decoder (Llama 2,
        Mistral, TinyLlama) drops the leading space of a text's first token, so "▁world" alone reads
        "world" and a strip of such tokens "Helloworld". Decoded after an anchor token whose own text is
        then cut off, it keeps its space; a byte-level token (GPT-2's BPE) reads the same either way."""
        if self.anchor is None:
            try:
                ids = self.tokenizer.encode("a", add_special_tokens=False)
            except (AttributeError, TypeError, ValueError):     # a tokenizer that only decodes: no anchor
                ids = []
            self.anchor = (ids[-1], self.tokenizer.decode(ids[-1:])) if ids else ()
        if self.anchor:
            text = self.tokenizer.decode([self.anchor[0], token])
            if text.startswith(self.anchor[1]):
                return text[len(self.anchor[1]):]
        return self.tokenizer.decode([token])

    def bytes_of(self, token: int) -> bytes | None:
        """The token's bytes where its text reads U+FFFD and its vocabulary entry gives them, else None."""
        if token not in self.raw:
            text = self(token)
            self.raw[token] = token_bytes(self.tokenizer, token, text) if BROKEN in text else None
        return self.raw[token]

    def label(self, token: int) -> str:
        """The token's bytes label ("⟨F0 9F⟩") where its text alone reads U+FFFD for bytes that are part of a
        character; "" where the text reads on its own (a U+FFFD the token really holds, bytes EF BF BD,
        included) or the bytes cannot be found."""
        if token not in self.labels:
            data = self.bytes_of(token)
            label = bytes_label(data) if data is not None else ""
            self.labels[token] = label if label != self(token) else ""
        return self.labels[token]

    def commit(self, tokens: list[int]) -> tuple[list[str], str]:
        """What each committed token adds to the output (a split character whole on the token that
        completes it, "" on the ones before), and the bytes label of a character still incomplete after
        them ("" when none). Called once per step, in order: it carries those bytes to the next step."""
        pieces = []
        for token in tokens:
            data, waiting = self.bytes_of(token), self.utf8.getstate()[0]
            if data is not None:
                pieces.append(self.utf8.decode(data))
            elif waiting:        # bytes that never became a character read U+FFFD, as the output does
                pieces.append(self.utf8.decode(b"", final=True) + self(token))
                self.utf8.reset()
            else:
                pieces.append(self(token))
        return pieces, bytes_label(self.utf8.getstate()[0])
