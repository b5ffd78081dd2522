"""The step trace: the one contract between the engine and everything that shows or checks a run.

A run is a plain JSON object: {"version", "meta", "prompt", "output_ids", "output_text", "steps",
"summary"}. Each step records the verified draft tree (tokens, texts, parents with -1 = the root,
depth, q, p_hat, rank, and each node's source: draft / recycled / retrieved / both; `labels`: see
"Token texts" below), the accepted node
indices in order (the verifier's path), `accept_length`
(the draft tokens actually committed: the accepted path, cut where EOS or the token limit ended the
run), the bonus token, the committed tokens (`committed`, `committed_text` decoded together, and
`pieces` and `pending`: see "Token texts"), E(A) and the per-depth E(A) values that decided the
tree's depth, plus timings. A trace whose `accept_length` is the whole accepted path (older
engines wrote that) loads too; `committed_draft(step)` reads either kind. A step sized by the auto
budget also records its objective table (`auto`: expected tokens/s per depth and size, the modelled
draft time per depth, the frontier widths and the chosen depth and size), and `meta["cost"]` holds
the machine's measured cost curve in compact form (engine/cost.py). `meta["target"]` and `meta["draft"]` name
the models as the run's pair records them (`ModelPair.recorded_names`): an app's run by their public names
(a server's folder by its base name, serve/allow_list.py), a command-line run as they were given. A drafted
run's meta records the draft's acceptance by rank (`acceptance_by_rank`, Sequoia's vector, and
`acceptance_source`: its card or the default prior) and a run given a static shape its rank paths
(`static_paths`). `meta["retrieval"]` is what the run did ("on"/"off"); where the setting was "auto" (on
wherever a draft model drafts, drafters/registry.resolve_retrieval), `retrieval_asked` keeps "auto" (a link or
an import restores that), and where `tree_temperature` is not the setting (0: the draft's fitted value at T = 0
and a fixed budget, 1 under the auto budget and when sampling; the training-free drafters: always 1),
`tree_temperature_asked` keeps the setting. A step whose depth
a length controller chose records the decision (`length`: for Thompson sampling the posterior's alpha and
beta, the sampled theta and the price δ; for the predictor its predicted accepted length; and the chosen
depth; trees/length_control.py). All of these are optional: traces written before them load unchanged (a
trace without `source` came from a draft model). Views, replay, export and tests read only this record;
opttree/trace_file.py writes it to a file and reads one back (`loads`), and its `validate_trace` guards every
trace that comes from outside (imports are untrusted).

The target's side of a step (optional: traces written before it existed lack both fields):
- `p_target`: per node, the target's probability of the node's token at its parent's row, i.e. the
  target's p of that child given the committed text and the node's ancestors;
- `topk_rows`: for at most ROWS_PER_STEP verified rows (the root as node -1, the accepted nodes in
  order, then other expanded nodes by p̂), {"node", "ids", "texts", "p", "q"}: the union of the
  target's and the draft's TOPK most likely tokens at that row, each with the target's p and the
  draft's q, ordered by p (so the target's top TOPK are the first TOPK by p). A run keeps at most
  ROWS_PER_RUN rows in all; later steps record none. Autoregressive runs and runs timed by the
  benchmarks (`record_target=False`) record neither field.
Token texts. `texts` (and `bonus_text`, a row's `texts`) hold each token's own text, as it reads after
other text (engine/recording.TokenTexts: a SentencePiece token keeps its leading space). A byte-level
tokenizer (SmolLM2's GPT-2-style BPE; SentencePiece's byte fallback) splits an emoji, a CJK or Arabic
letter or an accented letter over several tokens, and each of them decoded alone reads U+FFFD ("�").
For those tokens the engine records what they hold (decoding/token_bytes.py); all three are optional:
- `labels` (per node, present when some node needs one; a row's `labels` likewise) and `bonus_label`:
  the token's bytes with whole characters as themselves and the other bytes in hex between angle
  brackets (" ⟨F0 9F 98⟩": a space and the first 3 of 😀's 4 bytes); "" (or absent) where the text
  reads on its own or where the tokenizer's vocabulary does not give the bytes (the text stands).
  Views show the label where there is one (`node_text`, `bonus_shown`, `row_texts`);
- `pieces`: per committed token, the text it adds to the output: a character split over tokens reads
  whole on the token that completes it (the tokens before it add ""), every other token its text;
- `pending`: the bytes label of the character the text committed so far ends inside (a live run
  between the steps holding its bytes, or a run cut at the token limit); absent where the text ends
  on a whole character.
Traces without them (older engines) show the tokens' own texts; the text view mends a split character
that still reads U+FFFD (in those traces, or where the vocabulary did not give the bytes) from
`output_text` (viz/text_view.py).

p is the target's sampling distribution when temperature > 0 and its softmax at T = 1 when the run is
greedy (`meta.target_distribution` says which); q is the draft distribution the tree was built from
(at the tree temperature in `meta.tree_temperature`). p, q and p_target are rounded to 6 decimals, p_hat to 8.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

VERSION = 1
BROKEN = "\ufffd"     # what a token decoded alone reads for the bytes of a character it holds only part of
# Where a node came from: a draft model, Token Recycling's table, retrieval, or a draft model and retrieval.
SOURCES = ("draft", "recycled", "retrieved", "both")
TOPK = 8                  # tokens per side (target, draft) in a recorded row
ROWS_PER_STEP = 16        # recorded rows per step
ROWS_PER_RUN = 4096       # recorded rows per run (~3 MB of JSON at most)
SUMMARY_SHOWN = ("new_tokens", "steps", "tau", "tokens_per_s")   # in every run's summary; views print them
WALL_DECIMALS, SPEED_DECIMALS = 4, 3   # a summary's wall_s and tokens_per_s are rounded to these
STEP_TIMES = ("draft_ms", "build_ms", "verify_ms")   # a step's phases, timed within the run's wall_s
MS_DECIMALS, PREFILL_DECIMALS = 3, 2   # a step's times and their means are rounded to these; prefill_ms to these


@dataclass
class BuildInfo:
    """What the tree builders and the loop say about a step's tree, as its record keeps it."""

    ea_by_depth: list[float] = field(default_factory=lambda: [0.0])   # E(A) after each layer, 0 first
    stop_reason: str = ""            # why the tree stopped growing (the δ rule, max depth, the budget…)
    auto: dict | None = None         # the auto budget's objective table (trees/auto_size.Objective.record)
    length: dict | None = None       # the length controller's decision (trees/length_control.py)

    def note(self, text: str, sep: str = "; ") -> None:
        """Add a note to the stop reason."""
        self.stop_reason = f"{self.stop_reason}{sep}{text}" if self.stop_reason else text


@dataclass
class StepData:
    """What one decoding step produced, as the loop hands it to the trace."""

    tree: object                 # the verified DraftTree
    info: BuildInfo              # the builder's notes: ea_by_depth, stop_reason, auto, length
    accepted: list[int]          # accepted node indices, root to leaf
    bonus: int                   # the target's own token after the accepted path
    rejected: int | None         # the draft's first-choice node the target refused (None when none)
    committed: list[int]         # tokens committed this step (cut at EOS or the token limit)
    draft_ms: float
    build_ms: float
    verify_ms: float
    p_target: list[float] | None = None   # per node: the target's p of its token at its parent's row
    topk_rows: list[dict] | None = None   # {"node", "ids", "p", "q"} per recorded row (texts added here)
    prefill_ms: float | None = None       # the prompt's prefill before this step: a run's first step only


def draft_weights(cost: dict | None) -> str:
    """What a view adds to a draft's name for the kernel its cost curve (`meta.cost`, or a cached curve's
    key) records: " (int8 weights)" for a CPU draft on int8 (nets/few_row_linear.py), else ""."""
    return " (int8 weights)" if isinstance(cost, dict) and cost.get("draft_kernel") == "int8" else ""


def step_record(index: int, step: StepData, text_of, decode) -> dict:
    """The JSON record of one step; `decode(ids)` is a span's text, and `text_of` (engine/recording.py,
    `TokenTexts`) gives one token's text (`text_of(token)`), its bytes label (`text_of.label(token)`, ""
    where the text reads on its own) and, called once per step in order, the committed tokens' pieces and
    the pending bytes' label (`text_of.commit(tokens)`; "Token texts" above)."""
    tree = step.tree
    labels = [text_of.label(t) for t in tree.tokens]
    bonus_label = text_of.label(step.bonus)
    pieces, pending = text_of.commit(step.committed)
    return {
        "step": index,
        "tokens": list(tree.tokens), "texts": [text_of(t) for t in tree.tokens], "parents": list(tree.parents),
        **({"labels": labels} if any(labels) else {}),
        "depth": list(tree.depth), "q": [round(x, 6) for x in tree.q],
        "p_hat": [round(x, 8) for x in tree.p_hat], "rank": list(tree.rank),
        "source": list(tree.source) if tree.source else ["draft"] * len(tree.tokens),
        "accepted": step.accepted, "accept_length": min(len(step.accepted), len(step.committed)),
        "bonus_token": step.bonus, "bonus_text": text_of(step.bonus), "rejected": step.rejected,
        **({"bonus_label": bonus_label} if bonus_label else {}),
        "committed": step.committed, "committed_text": decode(step.committed), "pieces": pieces,
        **({"pending": pending} if pending else {}),
        "expected_accept": round(sum(tree.p_hat), 6),
        "ea_by_depth": [round(x, 6) for x in step.info.ea_by_depth],
        "stop_reason": step.info.stop_reason,
        **{k: round(getattr(step, k), MS_DECIMALS) for k in STEP_TIMES},
        **_target_side(step, text_of),
        # the auto budget's objective table (trees/auto_size.py), for "Why this shape"
        **({"auto": step.info.auto} if step.info.auto is not None else {}),
        # the length controller's decision and its inputs (trees/length_control.py)
        **({"length": step.info.length} if step.info.length is not None else {}),
    }


def _target_side(step: StepData, text_of) -> dict:
    out = {}
    if step.p_target is not None:
        out["p_target"] = [round(x, 6) for x in step.p_target]
    if step.topk_rows is not None:
        out["topk_rows"] = [_row(r, text_of) for r in step.topk_rows]
    return out


def _row(row: dict, text_of) -> dict:
    labels = [text_of.label(t) for t in row["ids"]]
    return {"node": row["node"], "ids": list(row["ids"]), "texts": [text_of(t) for t in row["ids"]],
            **({"labels": labels} if any(labels) else {}),
            "p": [round(x, 6) for x in row["p"]], "q": [round(x, 6) for x in row["q"]]}


def shown_text(texts: list[str], labels: list[str] | None, i: int) -> str:
    """What a view shows for token `i` of `texts`: its bytes label where `labels` has one, else its text
    ("Token texts" above; traces without `labels` show their texts)."""
    label = labels[i] if isinstance(labels, list) and i < len(labels) else ""
    return label if isinstance(label, str) and label else texts[i]


def node_text(step: dict, i: int) -> str:
    """Node `i`'s token as views show it (its bytes label, or its text)."""
    return shown_text(step["texts"], step.get("labels"), i)


def bonus_shown(step: dict) -> str:
    """The step's bonus token as views show it (its bytes label, or its text)."""
    return str(step.get("bonus_label") or step.get("bonus_text", ""))


def row_texts(row: dict) -> list[str]:
    """A recorded row's tokens as views show them (their bytes labels, or their texts)."""
    return [shown_text(row["texts"], row.get("labels"), i) for i in range(len(row["texts"]))]


def committed_draft(step: dict) -> int:
    """Draft tokens a recorded step committed (its accepted path cut at EOS or the token limit).

    Older traces recorded the whole accepted path as `accept_length`; their `committed` list says
    where a step was cut."""
    length = step["accept_length"]
    committed = step.get("committed")
    return min(length, len(committed)) if isinstance(committed, list) else length


def committed_bonus(step: dict) -> bool:
    """Whether a recorded step committed its bonus token (EOS or the token limit can end the run first;
    older traces without a `committed` list always did)."""
    committed = step.get("committed")
    return not isinstance(committed, list) or len(committed) > committed_draft(step)


def acceptance(steps: list[dict]) -> dict:
    """How much of the drafts the target accepted, named as vLLM, SGLang and Spec-Bench name them.

    - `mean_accepted_draft_tokens`: draft tokens committed per step (τ − 1 when every step ends with
      its bonus token; the paper's A);
    - `draft_acceptance_rate`: committed draft tokens / draft tokens verified (every tree node counts,
      so a wide tree has a low rate even when its best path is long);
    - `acceptance_by_depth[d-1]`: of the steps whose tree reaches depth d, the share whose committed
      path reaches depth d (vLLM's per-position rate; `drafted_by_depth[d-1]` counts those steps, so
      rates over several runs combine by their counts, up to the 4-decimal rounding of the rates).
    """
    n = len(steps)
    accepted = [committed_draft(s) for s in steps]
    verified = sum(len(s["tokens"]) for s in steps)
    deepest = [max(s["depth"], default=0) for s in steps]
    drafted = [sum(1 for d in deepest if d >= depth) for depth in range(1, max(deepest, default=0) + 1)]
    reached = [sum(1 for a, d in zip(accepted, deepest) if d >= depth and a >= depth)
               for depth in range(1, len(drafted) + 1)]
    return {
        "mean_accepted_draft_tokens": round(sum(accepted) / n, 4) if n else 0.0,
        "draft_acceptance_rate": round(sum(accepted) / verified, 4) if verified else 0.0,
        "acceptance_by_depth": [round(r / k, 4) for r, k in zip(reached, drafted)],
        "drafted_by_depth": drafted,
    }


def percent(x: float, space: str = "") -> str:
    """A share as a whole percentage that never rounds onto a bound it does not reach: 0.004 is '<1%',
    not 0% (drafts were accepted), and 0.996 is '>99%', not 100% (an exact-match rate that rounds
    to 100% would claim every output matched)."""
    if 0 < x < 0.005:
        return f"<1{space}%"
    if 0.995 <= x < 1:
        return f">99{space}%"
    return f"{x * 100:.0f}{space}%"


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """'1 node', '3 nodes', '0 nodes': a count with its noun (plural by adding s, or `plural`: 'matches')."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def by_depth_text(rates, shown: int = 6) -> str:
    """Per-depth acceptance rates in words: '90% · 70% · 45% …' (the first `shown` depths)."""
    if not rates:
        return "–"
    return " · ".join(percent(r) for r in rates[:shown]) + (" …" if len(rates) > shown else "")


def is_number(x) -> bool:     # a finite int or float, not a bool (imported traces may hold anything)
    return (isinstance(x, (int, float)) and not isinstance(x, bool)) and math.isfinite(x)


def summarize(steps: list[dict], new_tokens: int, wall_s: float, prefill_ms: float | None = None) -> dict:
    """A run's figures. `wall_s` and `tokens_per_s` time the whole run, the prompt's prefill included
    (`prefill_ms` of it; None when not measured): speculative decoding shortens the steps, not the prefill."""
    n = len(steps)
    return {
        "new_tokens": new_tokens, "steps": n,
        # τ (Spec-Bench/EAGLE convention): committed tokens per target forward, bonus included.
        "tau": round(new_tokens / n, 4) if n else 0.0,
        "wall_s": round(wall_s, WALL_DECIMALS),
        "tokens_per_s": round(new_tokens / wall_s, SPEED_DECIMALS) if wall_s > 0 else 0.0,
        "prefill_ms": None if prefill_ms is None else round(prefill_ms, PREFILL_DECIMALS),
        "mean_nodes": round(sum(len(s["tokens"]) for s in steps) / n, 4) if n else 0.0,
        "mean_depth": round(sum(max(s["depth"], default=0) for s in steps) / n, 2) if n else 0.0,
        "mean_expected_accept": round(sum(s["expected_accept"] for s in steps) / n, 4) if n else 0.0,
        **acceptance(steps),
        **{f"mean_{k}": round(sum(s.get(k, 0) for s in steps) / n, MS_DECIMALS) if n else 0.0 for k in STEP_TIMES},
    }
