"""Compare's table and its words: one row per method at each node budget, each figure a mean over the
comparison's prompts with its standard error where it varies by prompt. Pure functions of a
comparison's summary (plain data, `opttree/bench/compare.py`)."""

from __future__ import annotations

import html

from opttree.trace import percent
from viz.cost_chart import usable
from viz.metrics import why_slower

ALL = "all"    # the table's budget filter: every row


COLUMNS = ["method", "budget", "nodes / step", "τ ± SE", "speedup vs AR ± SE", "same output as AR", "depth",
           "accepted / step", "acceptance", "ms draft+build / verify", "prefill ms / run", "why slower than AR"]
# ± figures on one line, and no header word split across lines in the page's 1,230 px table (a bold header
# character is about 8.5 px there, a cell's padding 16 px)
WIDTHS = ["9%", "6%", "8%", "10%", "10%", "8%", "5%", "7%", "9%", "9%", "7%", "12%"]
HEADER_CHAR_PX, CELL_PAD_PX, TABLE_PX = 8.5, 16, 1230


def prompts_text(n: int) -> str:
    return f"{n} prompt{'' if n == 1 else 's'}"


def table_label(summary: dict | None) -> str:
    """What every figure in the table is: a mean over the prompts, ± one standard error."""
    if not summary:
        return "Each method's figures (press Compare)"
    spread = ("(one prompt: no standard error)" if summary["prompts"] == 1
              else "± one standard error (SE) over them")
    return (f"Each figure is a mean over {prompts_text(summary['prompts'])} {spread}; "
            "tokens per step (τ), accepted draft tokens per step and speedup are per prompt, then averaged (the "
            "other columns pool every step). Speedup times whole runs, the "
            "prompt's prefill included (its own column): speculative decoding shortens the steps, not the prefill")


def budget_label(budget) -> str:
    return "—" if budget is None else ("auto" if budget == 0 else f"n = {budget}")


def budget_choices(summary: dict | None) -> list[str]:
    """The table's filter: every row, then each budget the comparison ran (fixed ones smallest first, auto)."""
    budgets = {r["budget"] for r in (summary or {}).get("rows", []) if r["budget"] is not None}
    return [ALL, *(budget_label(b) for b in sorted(budgets - {0})), *(["auto"] if 0 in budgets else [])]


def _num(x, spec: str = ".1f") -> str:
    return format(x, spec) if isinstance(x, (int, float)) else "—"


def _pm(x, se) -> str:
    if not isinstance(x, (int, float)):
        return "—"
    return f"{x:.2f}" + (f" ± {se:.2f}" if isinstance(se, (int, float)) else "")


def nodes_cell(row: dict) -> str:
    """The nodes a step drafted on average; where a static shape holds fewer than the budget, it says so."""
    if row["budget"] is None:
        return "—"
    text = _num(row.get("mean_nodes"))
    if row.get("capacity"):
        return f"{text} (holds {row['capacity']} of {row['budget']})"
    return text


def same_cell(row: dict, greedy: bool) -> str:
    """Whether each prompt's output equals AR's. Sampled, every run draws with the same seed, and a tree run
    commits AR's tokens (each committed token costs one draw: decoding/sampling.TokenPicker), so the check
    holds there too; the cell says it rests on the shared seed (the guarantee itself is AR's distribution)."""
    if row["budget"] is None:
        return "—"
    match = row.get("exact_match")
    if match is None:
        return "n/a" if greedy else "n/a (sampled: AR's distribution, not checked draw by draw)"
    n = row.get("prompts") or 0
    same = round(match * n)
    seed = "" if greedy else ", same seed"
    return f"yes ({same}/{n}{seed})" if same == n else f"NO ({same}/{n}{seed})"


def _why(row: dict, ar: dict | None, cost, context: float | None = None) -> str:
    """why_slower's sentence for a row slower than AR on average over prompts (`context`: their mean KV
    prefix, summary["context_tokens"])."""
    if ar is None or row is ar or not usable(cost) or not isinstance(row.get("speedup"), (int, float)) \
            or row["speedup"] >= 1 or not isinstance(row.get("mean_nodes"), (int, float)):
        return ""
    keys = ("tokens_per_s", "mean_nodes", "tau", "mean_draft_ms", "mean_build_ms", "mean_verify_ms")
    return why_slower({"summary": {k: row.get(k) or 0 for k in keys}},
                      {"summary": {k: ar.get(k) or 0 for k in keys}}, cost, context)


def table_row(row: dict, ar: dict | None, cost, greedy: bool, context: float | None = None) -> list[str]:
    drafted = row["budget"] is not None and bool(row.get("mean_nodes"))
    ms = (f"{(row.get('mean_draft_ms') or 0) + (row.get('mean_build_ms') or 0):.0f} / "
          f"{_num(row.get('mean_verify_ms'), '.0f')}")
    rate = row.get("draft_acceptance_rate")
    return [row["shape"], budget_label(row["budget"]), nodes_cell(row), _pm(row.get("tau"), row.get("tau_se")),
            _pm(row.get("speedup"), row.get("speedup_se")) + ("×" if row.get("speedup") is not None else ""),
            same_cell(row, greedy), _num(row.get("mean_depth")),
            _num(row.get("mean_accepted_draft_tokens"), ".2f") if drafted else "—",
            percent(rate) if drafted and isinstance(rate, (int, float)) else "—", ms,
            _num(row.get("mean_prefill_ms"), ".0f"), _why(row, ar, cost, context)]


def compare_table(summary: dict | None, budget: str = ALL) -> dict:
    """{"headers", "data"}: AR first, then the rows at `budget` (a `budget_choices` label; ALL: every row)."""
    if not summary:
        return {"headers": COLUMNS, "data": []}
    rows = summary["rows"]
    ar = next((r for r in rows if r["budget"] is None), None)
    shown = [r for r in rows if r["budget"] is None or budget == ALL or budget_label(r["budget"]) == budget]
    order = {b: i for i, b in enumerate(budget_choices(summary))}
    shown.sort(key=lambda r: -1 if r["budget"] is None else order.get(budget_label(r["budget"]), 0))
    return {"headers": COLUMNS,
            "data": [table_row(r, ar, summary.get("cost"), summary.get("greedy", True), summary.get("context_tokens"))
                     for r in shown]}


def verdict_text(summary: dict | None) -> str:
    """The verdict (Markdown, one or two sentences computed from the spread), and how many prompts it rests on."""
    if not summary:
        return ""
    said = html.escape(summary.get("verdict") or "No OPT-Tree row to judge: tick at least one static tree.")
    n = summary["prompts"]
    early = f" ⚠️ {html.escape(summary['stopped_early'])}." if summary.get("stopped_early") else ""
    alone = (" One prompt has no spread, so nothing can be told apart: compare over the built-in prompts too."
             if n == 1 else "")
    return (f"**Verdict** ({prompts_text(n)}; a difference counts only beyond two standard errors of its "
            f"per-prompt mean): {said}{early}{alone}")
