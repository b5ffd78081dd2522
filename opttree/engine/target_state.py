"""The target's side of a run between steps: its KV cache, the committed tokens, and the hidden
states the drafter and the length controller read from each verification."""

from __future__ import annotations

import torch

from opttree.decoding.kv_cache import new_cache
from opttree.decoding.verify import accept, drafter_features, keep_accepted, verify_tree
from opttree.engine.step_timer import StepTimer
from opttree.models.loading import last_logits_only
from opttree.trees.draft_tree import DraftTree


class TargetState:
    def __init__(self, pair, drafter, lengths, prompt_ids: list[int]):
        self.target, self.device, self.drafter = pair.target, pair.device, drafter
        # Hidden states the forwards return: the drafter's layers (feature head: the last, fused head: a
        # low, a middle and the last; early exit: N) and, for a length controller that reads it, the last.
        self.feat_layers = drafter.feature_layers if drafter else ()
        self.state_layer = -1 if lengths and lengths.needs_features else None
        extra = () if self.state_layer is None else (self.state_layer,)
        self.layers = tuple(dict.fromkeys((*self.feat_layers, *extra)))
        self.cache = new_cache(self.target)
        if drafter:
            drafter.attach(self.cache)   # an early-exit drafter runs the target's first layers on this cache
        self.committed = list(prompt_ids)
        # The target's features of the committed tokens the drafter has not read yet (it keeps the
        # ones it has read in its own cache): only new rows are kept, never the whole history.
        self.features = None
        self.last_state = None   # the target's state at the token before the next root, for a length controller

    def prefill(self) -> None:
        """Every prompt token but the last, which is the first step's root, verified with the tree.
        Its logits are computed only for a drafter that reads them (`last_logits_only`)."""
        if len(self.committed) < 2:
            return
        rows = bool(self.drafter) and self.drafter.reads_prompt_rows
        out = self.target(input_ids=torch.tensor([self.committed[:-1]], device=self.device),
                          past_key_values=self.cache, use_cache=True, output_hidden_states=bool(self.layers),
                          **({} if rows else last_logits_only(self.target)))
        self.features = drafter_features({layer: out.hidden_states[layer][0] for layer in self.layers},
                                         self.feat_layers)
        if self.state_layer is not None:
            self.last_state = out.hidden_states[-1][0][-1]
        if rows:   # the prompt's rows: Token Recycling's first table
            self.drafter.observe(self.committed[:-1], out.logits[0])

    def begin_step(self) -> None:
        """The drafter reads the committed tokens and the features it has not seen yet."""
        self.drafter.begin_step(self.committed, self.features)
        self.features = None   # read: the drafter keeps what it needs

    def verify(self, tree: DraftTree, picker, timer: StepTimer, drafted: bool):
        """One target forward over the root and the tree; the accepted path stays in the cache and
        its hidden states join the features. (accepted, bonus, rejected, logits)."""
        root = self.committed[-1]
        prefix = self.cache.get_seq_length()
        logits, states = verify_tree(self.target, self.cache, root, tree, self.device, self.layers)
        accepted, bonus, rejected = accept(tree, logits, picker)
        if self.drafter:
            with timer.phase("draft"):
                self.drafter.observe([root, *tree.tokens], logits)  # every scored row, rejected ones too
        keep_accepted(self.cache, prefix, accepted)
        rows = [0] + [a + 1 for a in accepted]     # the root's and the accepted nodes' rows
        if self.feat_layers:
            got = drafter_features(states, self.feat_layers)
            got = got.index_select(0, torch.tensor(rows, device=got.device))
            self.features = got if self.features is None else torch.cat([self.features, got])
        if self.state_layer is not None:
            self.last_state = states[self.state_layer][rows[-1]]
        if self.drafter and drafted:
            self.drafter.end_step([tree.origin[a] for a in accepted])
        return accepted, bonus, rejected, logits
