"""What a run brings to its drafter besides the models: a session's Token Recycling table, a corpus.

Pairs (models) are shared read-only between visitors; everything here belongs to one run or one
visitor, so it travels with the run (`stream_run(..., context=...)`), never on the pair.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from opttree.drafters.recycling import RecyclingTable


@dataclass
class DraftContext:
    table: RecyclingTable | None = None     # a session's recycling table (None: a fresh one for the run)
    corpus: np.ndarray | None = None        # token ids retrieval searches besides the text (--retrieval-corpus)
