"""The target's next-token rule: argmax at temperature 0, else a sample from the warped distribution
(temperature, then top-k, then top-p — the order transformers applies them).

Every accepted setting yields a distribution: the logits are shifted by their maximum and divided
by the temperature in float64, so any T > 0 (down to the smallest positive float) gives finite
values, and a tiny T puts (almost) all the mass on the most likely token instead of overflowing;
top-p always keeps the most likely token, so top_p = 0 samples only that token.
"""

from __future__ import annotations

import torch


def warp(logits: torch.Tensor, temperature: float, top_k: int = 0, top_p: float = 1.0) -> torch.Tensor:
    """Probabilities after temperature / top-k / top-p; `logits` is (..., vocab)."""
    logits = logits.double()
    # max - max = 0 stays 0 whatever T is; the others become large negative numbers or -inf.
    logits = (logits - logits.max(dim=-1, keepdim=True).values) / temperature
    if top_k and top_k < logits.shape[-1]:
        kth = torch.topk(logits, top_k, dim=-1).values[..., -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    probs = torch.softmax(logits, dim=-1)
    if top_p < 1.0:
        sorted_p, idx = torch.sort(probs, dim=-1, descending=True)
        # Drop a token when the mass before it already reaches top_p; the top token always stays.
        drop = (sorted_p.cumsum(-1) - sorted_p) >= top_p
        drop[..., 0] = False
        sorted_p = sorted_p.masked_fill(drop, 0.0)
        probs = torch.zeros_like(probs).scatter(-1, idx, sorted_p)
        probs = probs / probs.sum(-1, keepdim=True)
    return probs


NUCLEUS_CANDIDATES = 256   # top-p: a row's nucleus is looked for among its most likely tokens first


def theory_distribution(logits: torch.Tensor, temperature: float, top_k: int = 0, top_p: float = 1.0) -> torch.Tensor:
    """The target distribution p the trace records for the theory view, rows of `logits` (rows, vocab).

    Sampling (T > 0): the distribution the picker draws from (`warp`). Greedy (T = 0): the argmax
    has no distribution, so the model's own softmax at T = 1 stands in for p.

    With top-p the trace needs many rows a step, and `warp` sorts each whole row (~7 ms per row of a
    49k vocabulary on the 2-core CPU, 2026-11-22); here the nucleus is found among each row's NUCLEUS_CANDIDATES most
    likely tokens (one top-k), and only rows whose nucleus is wider than that go through `warp`."""
    if temperature == 0.0:
        return torch.softmax(logits.float(), dim=-1)
    if top_p >= 1.0:
        return warp(logits, temperature, top_k)
    probs = warp(logits, temperature, top_k)
    vals, idx = torch.topk(probs, min(NUCLEUS_CANDIDATES, probs.shape[-1]), dim=-1)
    before = vals.cumsum(-1) - vals
    drop = before >= top_p
    drop[..., 0] = False   # as in `warp`: the top token always stays (top_p = 0 is greedy-like)
    out = torch.zeros_like(probs).scatter(-1, idx, vals.masked_fill(drop, 0.0))
    out = out / out.sum(-1, keepdim=True)
    wide = (before[..., -1] + vals[..., -1]) < top_p   # the nucleus reaches past the candidates
    if wide.any():
        out[wide] = warp(logits[wide], temperature, top_k, top_p)
    return out


def theory_distribution_note(temperature: float, top_k: int = 0, top_p: float = 1.0) -> str:
    """What `theory_distribution` is for these settings, in words (kept in the trace's meta)."""
    if temperature == 0.0:
        return "softmax of the target's logits at T = 1 (the run itself is greedy: it takes the argmax)"
    return (f"the target's sampling distribution (temperature {temperature:g}, top-k {top_k or 'off'}, "
            f"top-p {top_p:g})")


class TokenPicker:
    """Holds the run's own RNG so concurrent runs never share random state.

    Each call at T > 0 is exactly one draw from that generator, so a run commits its k-th token with
    its k-th draw whatever tree was verified: a tree run and the AR run with the same seed draw the
    same tokens (up to float differences between the two forwards at near-ties).
    """

    def __init__(self, temperature: float, top_k: int = 0, top_p: float = 1.0, seed: int = 0,
                 device="cpu"):
        self.temperature, self.top_k, self.top_p = temperature, top_k, top_p
        self.generator = torch.Generator(device=device)
        self.generator.manual_seed(seed)

    def distribution(self, logits: torch.Tensor) -> torch.Tensor:
        """p for the trace's theory fields (`theory_distribution` at this picker's settings)."""
        return theory_distribution(logits, self.temperature, self.top_k, self.top_p)

    def __call__(self, logits: torch.Tensor) -> int:
        if self.temperature == 0.0:
            return int(torch.argmax(logits))
        probs = warp(logits, self.temperature, self.top_k, self.top_p)
        return int(torch.multinomial(probs.to(self.generator.device), 1, generator=self.generator))
