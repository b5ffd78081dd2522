"""Token Recycling (Luo et al., 2024): drafting from the target's own past candidates, no draft model.

Every verification scores the root and every tree node, and most of those rows are thrown away (the
rejected branches). Token Recycling keeps them: an adjacency table holds, for each token id, the K
tokens the target ranked highest right after it, with the target's probability of each, as last
seen. Each step the tree is read from the table (a node's children are its token's row), and after
the verification every row the target scored, rejected nodes included, overwrites its token's row.
The prompt's rows fill the table before the first step (the prefill computes them for this drafter
only, `reads_prompt_rows`).

Stored densely: K = 8 int32 ids and K float16 probabilities per vocabulary entry, 48 bytes a token
(2.4 MB for a 49k vocabulary), whatever the run's length.

What q means here: the target's probability of the candidate after the same token the last time the
target scored that token, in whatever context that was. It ranks candidates and lets OPT-Tree pick
the best n nodes, but it is not a calibrated chance of acceptance (the context differs, and at T = 0
the target accepts only its argmax). The verifier alone decides what is committed.
"""

from __future__ import annotations

import threading

import torch

from opttree.drafters.base import SparseDrafter
from opttree.trees.draft_tree import ROOT, DraftTree

K = 8                 # candidates kept per token
PREFILL_CHUNK = 256   # prompt rows turned into candidates at a time (bounds the softmax's memory)


class RecyclingTable:
    """token id -> its top-K next-token candidates and their target probabilities (as last seen).

    One table per run, or per browser session (kept by the service, never shared between visitors).
    A session's runs may overlap, so reads and writes take a lock."""

    def __init__(self, vocab_size: int, k: int = K):
        self.vocab_size, self.k = int(vocab_size), int(k)
        self.ids = torch.full((self.vocab_size, self.k), -1, dtype=torch.int32)
        self.probs = torch.zeros((self.vocab_size, self.k), dtype=torch.float16)
        self._lock = threading.Lock()

    @property
    def nbytes(self) -> int:
        return self.ids.numel() * self.ids.element_size() + self.probs.numel() * self.probs.element_size()

    def rows_filled(self) -> int:
        with self._lock:
            return int((self.ids[:, 0] >= 0).sum())

    def update(self, tokens: list[int], logits: torch.Tensor) -> None:
        """Row i of `logits` follows tokens[i]; a token that appears twice keeps its last row."""
        if not len(tokens):
            return
        last: dict[int, int] = {}
        for i, t in enumerate(tokens):
            if 0 <= t < self.vocab_size:
                last[int(t)] = i
        if not last:
            return
        ids, probs = [], []
        for start in range(0, logits.shape[0], PREFILL_CHUNK):
            chunk = logits[start:start + PREFILL_CHUNK].float()
            top = torch.topk(chunk, min(self.k, chunk.shape[-1]), dim=-1)
            p = torch.exp(top.values - torch.logsumexp(chunk, dim=-1, keepdim=True))
            ids.append(top.indices.to("cpu", torch.int32))
            probs.append(p.to("cpu", torch.float16))
        ids, probs = torch.cat(ids), torch.cat(probs)
        width = ids.shape[1]
        rows = torch.tensor(list(last.values()), dtype=torch.long)
        where = torch.tensor(list(last.keys()), dtype=torch.long)
        with self._lock:
            self.ids[where, :width] = ids[rows]
            self.probs[where, :width] = probs[rows]

    def lookup(self, tokens: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
        """(ids, q) of shape (len(tokens), K), best first; unknown entries have id 0 and q 0."""
        where = torch.tensor([t if 0 <= t < self.vocab_size else 0 for t in tokens], dtype=torch.long)
        with self._lock:
            ids, q = self.ids[where].long(), self.probs[where].float()
        q = torch.where(ids >= 0, q, torch.zeros_like(q))
        bad = torch.tensor([not 0 <= t < self.vocab_size for t in tokens])
        q[bad] = 0.0
        return ids.clamp_min(0), q


class RecyclingDrafter(SparseDrafter):
    source = "recycled"
    proposed_nothing = ("the table holds no candidates after the last token yet: nothing to propose, the target "
                        "adds one token")
    reads_prompt_rows = True    # the prompt's rows are the table's first entries

    def __init__(self, vocab_size: int, table: RecyclingTable | None = None):
        super().__init__(vocab_size)
        self.table = table if table is not None else RecyclingTable(vocab_size)
        self.root_token = 0

    def begin_step(self, committed: list[int], features=None) -> None:
        self.root_token = committed[-1]

    def top_children(self, tree: DraftTree, nodes: list[int], k: int):
        ids, q = self.table.lookup([self.root_token if n == ROOT else tree.tokens[n] for n in nodes])
        return ids[:, :k], q[:, :k]

    def observe(self, tokens: list[int], logits: torch.Tensor) -> None:
        self.table.update(tokens, logits)
