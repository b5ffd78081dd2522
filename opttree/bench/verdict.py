"""What a comparison over several prompts supports, computed from its rows: each method's mean τ and
speedup with their spread, and a verdict in words that never ranks what the spread does not separate.

The rows are `run_bench`'s (`result["runs"]`: one per method and prompt, AR among them). Two lessons
are kept apart, as the tool teaches them:
- **which shape accepts more at the same budget** (the paper's claim): OPT-Tree's τ against the best
  static shape's at each fixed budget, paired per prompt (the same prompt under both trees);
- **what is fastest on this machine**: the speedups at the auto budget, paired the same way.
A difference counts only when it exceeds two standard errors of its paired mean; otherwise the
verdict says the methods are within noise of each other.

`python -m opttree.bench.verdict RESULT.json A B` prints A against B from a saved bench result,
paired per prompt, overall and per category (`pair_table`): the τ and speed differences the
benchmark notes quote; `--against OTHER.json` reads B in a second result over the same prompts (the
same command at another commit), each speedup over its own run's AR.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics

from opttree.bench.harness import parse_spec
from opttree.config import AUTO_NODES
from opttree.errors import guarded

STATIC = ("eagle-static", "binary", "chain", "sequoia")   # the static shapes a verdict weighs OPT-Tree against
NOISE_SE = 2.0                                          # a paired difference must exceed this many SEs


def mean_se(values: list[float]) -> tuple[float | None, float | None]:
    """The mean and its standard error (None with no value; SE None with one)."""
    if not values:
        return None, None
    if len(values) == 1:
        return values[0], None
    return statistics.fmean(values), statistics.stdev(values) / math.sqrt(len(values))


def per_prompt(rows: list[dict]) -> dict[str, dict[str, dict]]:
    """{method: {prompt id: {"tau", "speedup", "accepted"}}}: speedup is the prompt's tokens/s over AR's on
    it, accepted its draft tokens committed per step (None where the row has none)."""
    ar = {r["prompt_id"]: r for r in rows if r["method"] == "ar"}
    out: dict[str, dict[str, dict]] = {}
    for r in rows:
        base = ar.get(r["prompt_id"])
        speed = r["tokens_per_s"] / base["tokens_per_s"] if base and base.get("tokens_per_s") else None
        out.setdefault(r["method"], {})[r["prompt_id"]] = {"tau": r["tau"], "speedup": speed,
                                                           "accepted": r.get("mean_accepted_draft_tokens")}
    return out


def spread(rows: list[dict]) -> dict[str, dict]:
    """Per method: mean τ and speedup over prompts, each with its standard error, the mean accepted draft
    tokens per step over prompts (`accepted`), and the prompt count."""
    out = {}
    for method, by_prompt in per_prompt(rows).items():
        taus = [v["tau"] for v in by_prompt.values()]
        speeds = [v["speedup"] for v in by_prompt.values() if v["speedup"] is not None]
        (tau, tau_se), (speed, speed_se) = mean_se(taus), mean_se(speeds)
        accepted, _ = mean_se([v["accepted"] for v in by_prompt.values() if v["accepted"] is not None])
        out[method] = {"tau": tau, "tau_se": tau_se, "speedup": speed, "speedup_se": speed_se,
                       "accepted": accepted, "prompts": len(by_prompt)}
    return out


def paired(a: dict[str, dict], b: dict[str, dict], key: str, relative: bool) -> tuple[float, float | None, int]:
    """Mean and SE over the prompts both ran of a[key] - b[key] (relative: a / b - 1)."""
    common = [p for p in a if p in b and a[p][key] is not None and b[p][key]]
    diffs = [(a[p][key] / b[p][key] - 1) if relative else (a[p][key] - b[p][key]) for p in common]
    mean, se = mean_se(diffs)
    return (mean or 0.0), se, len(common)


def separated(mean: float, se: float | None) -> bool:
    return se is not None and abs(mean) > NOISE_SE * se


def budget_of(method: str, base_nodes: int) -> int:
    spec = parse_spec(method)
    return base_nodes if spec.nodes is None else spec.nodes


def _plain(method: str) -> bool:
    spec = parse_spec(method)
    return spec.drafter is None and not spec.retrieval and spec.length_control is None


def _by_budget(methods: list[str], base_nodes: int) -> dict[int, dict[str, str]]:
    """{budget: {tree method: the method name run at it}} for the plain (own drafter) tree methods."""
    out: dict[int, dict[str, str]] = {}
    for m in methods:
        if m != "ar" and _plain(m) and parse_spec(m).method in ("opt-tree", *STATIC):
            out.setdefault(budget_of(m, base_nodes), {})[parse_spec(m).method] = m
    return out


def shape_finding(pp: dict, at: dict[str, str], budget: int) -> dict | None:
    """OPT-Tree's τ against the best static shape at one fixed budget, paired per prompt: the budget, the
    mean relative difference and its SE, the prompt count, the shape, and whether it beats the noise."""
    statics = [m for s, m in at.items() if s in STATIC]
    if "opt-tree" not in at or not statics:
        return None
    best = max(statics, key=lambda m: statistics.fmean(v["tau"] for v in pp[m].values()))
    mean, se, n = paired(pp[at["opt-tree"]], pp[best], "tau", relative=True)
    return {"budget": budget, "mean": mean, "se": se, "prompts": n, "shape": parse_spec(best).method,
            "separated": separated(mean, se)}


def _prompts(n: int) -> str:
    return f"{n} prompt{'' if n == 1 else 's'}"


def _pm(f: dict) -> str:
    return f"{f['mean']:+.0%}" + (f" ± {f['se']:.0%}" if f["se"] is not None else "")


def shape_sentence(f: dict) -> str:
    """The sentence for one fixed budget."""
    budget, name, n = f["budget"], f["shape"], f["prompts"]
    if not f["separated"]:
        return (f"At n = {budget}, OPT-Tree and the best static tree ({name}) accept within noise of each other "
                f"({_pm(f)} τ, over {_prompts(n)}).")
    more = "more" if f["mean"] > 0 else "fewer"
    return (f"At n = {budget}, OPT-Tree accepts {abs(f['mean']):.0%} {more} tokens per step than the best static "
            f"tree ({name}) (± {f['se']:.0%}, over {_prompts(n)}).")


def _listed(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def shapes_sentence(findings: list[dict]) -> str | None:
    """One sentence for every fixed budget: where OPT-Tree accepts more than the best static tree, where
    fewer, where the two are within noise (each with its paired difference)."""
    if not findings:
        return None
    if len(findings) == 1:
        return shape_sentence(findings[0])
    more = [f for f in findings if f["separated"] and f["mean"] > 0]
    fewer = [f for f in findings if f["separated"] and f["mean"] <= 0]
    tied = [f for f in findings if not f["separated"]]
    clauses = []
    for group, words in ((more, "accepts more tokens per step than the best static tree"),
                         (fewer, "accepts fewer tokens per step than the best static tree")):
        if group:
            clauses.append(f"{words} at " + _listed([f"n = {f['budget']} ({_pm(f)}, vs {f['shape']})" for f in group]))
    if tied:
        to = "it" if clauses else "the best static tree"
        clauses.append(f"is within noise of {to} at " + _listed([f"n = {f['budget']} ({_pm(f)})" for f in tied]))
    n = max(f["prompts"] for f in findings)
    return f"At the same node budget OPT-Tree {_listed(clauses)} (τ, paired per prompt, over {_prompts(n)})."


def speed_sentence(pp: dict, auto: list[str], stats: dict) -> str | None:
    """At the auto budget (`auto`: the methods run at it): is a tree faster than the others beyond noise?"""
    plain = [m for m in auto if _plain(m) and stats.get(m, {}).get("speedup") is not None]
    opt = next((m for m in plain if parse_spec(m).method == "opt-tree"), None)
    others = [m for m in plain if parse_spec(m).method in STATIC]
    if opt is None or not others:
        return None
    best = max(others, key=lambda m: stats[m]["speedup"])
    mean, se, n = paired(pp[opt], pp[best], "speedup", relative=False)
    a, b = stats[opt]["speedup"], stats[best]["speedup"]
    name = parse_spec(best).method
    if not separated(mean, se):
        return (f"At this machine's budget the shapes are within noise of each other in speed "
                f"(OPT-Tree {a:.2f}× vs {name} {b:.2f}× over AR, over {_prompts(n)}).")
    lead, other = ("OPT-Tree", name) if mean > 0 else (name, "OPT-Tree")
    return (f"At this machine's budget {lead} is the fastest tree ({max(a, b):.2f}× vs {other}'s {min(a, b):.2f}× "
            f"over AR, ± {se:.2f}, over {_prompts(n)}).")


def verdict(result: dict) -> str:
    """One or two sentences about OPT-Tree that the result's spread supports (empty with no OPT-Tree): the
    τ lesson over every fixed budget in one sentence, the speed lesson at the auto budget in another."""
    rows, methods = result["runs"], result["meta"]["methods"]
    base_nodes = result["meta"]["config"]["nodes"]
    pp, stats = per_prompt(rows), spread(rows)
    findings = [shape_finding(pp, at, b) for b, at in sorted(_by_budget(methods, base_nodes).items())
                if b != AUTO_NODES]
    auto = [m for m in methods if m != "ar" and budget_of(m, base_nodes) == AUTO_NODES] if "ar" in methods else []
    sentences = [shapes_sentence([f for f in findings if f]), speed_sentence(pp, auto, stats), disturbed(pp)]
    return " ".join(s for s in sentences if s)


BEYOND_TAU = 1.1    # a speedup this far past its τ is timing noise (10 % leaves room for jitter)
DISTURBED = "Timing was disturbed"    # how `disturbed`'s warning opens (`disturbed_warning` looks for it)


def disturbed_warning(said: str) -> str:
    """The warning `disturbed` adds to a verdict, read back from the verdict's text (the Compare tab's, which
    tools/screenshots.py reads): the last of its sentences, whole; '' where the timing was not disturbed."""
    return said[said.index(DISTURBED):].strip() if DISTURBED in said else ""


def disturbed(pp: dict[str, dict[str, dict]]) -> str:
    """A warning when a run beat AR by more than its τ allows: a step verifies at least one token and may
    draft too, so it costs at least an AR step and a run's speedup cannot exceed its τ (the shared prefill
    only lowers it). Beyond that, AR's own runs were slowed (other work on the machine) and the speedups
    on that prompt read high. '' otherwise."""
    worst = max(((v["speedup"] / v["tau"], m, v) for m, by in pp.items() if m != "ar" for v in by.values()
                 if v["speedup"] and v["tau"]), default=None, key=lambda t: t[0])
    if worst is None or worst[0] <= BEYOND_TAU:
        return ""
    _, method, v = worst
    return (f"{DISTURBED}: {method} ran {v['speedup']:.2f}× AR on a prompt at τ {v['tau']:.2f}, faster "
            "than τ allows, so AR's runs were slowed (other work on the machine?) and speedups read high: "
            "run it again.")


def pair_table(result: dict, a: str, b: str, by: str | None = "category", other: dict | None = None) -> list[dict]:
    """`a` against `b`, paired per prompt, overall and per `by` (a run row's field): the mean ± SE of the
    τ difference and of the speedup's relative difference, and the prompts where `a` is faster / slower
    (a tie is neither). With `other` (a second bench result over the same prompts, e.g. the same command
    at another commit), `b` is read there: each speedup stays over its own run's AR."""
    def grouped(rows):
        groups = {"all": rows}
        if by:
            for r in rows:
                groups.setdefault(str(r.get(by)), []).append(r)
        return groups

    mine, theirs = grouped(result["runs"]), grouped((other or result)["runs"])
    out = []
    for name, group in mine.items():
        pa, pb = per_prompt(group).get(a), per_prompt(theirs.get(name, [])).get(b)
        if pa is None or pb is None:
            continue
        tau, tau_se, n = paired(pa, pb, "tau", relative=False)
        speed, speed_se, _ = paired(pa, pb, "speedup", relative=True)
        both = [p for p in pa if p in pb and pa[p]["speedup"] and pb[p]["speedup"]]
        up = sum(pa[p]["speedup"] > pb[p]["speedup"] for p in both)
        down = sum(pa[p]["speedup"] < pb[p]["speedup"] for p in both)
        out.append({"group": name, "prompts": n, "tau": tau, "tau_se": tau_se, "speed": speed, "speed_se": speed_se,
                    "faster": up, "slower": down})
    return out


def _table_pm(x: float, e: float | None, scale: float = 1.0, digits: int = 3) -> str:
    """x ± e for the pair table: signed, scaled (100 for percent), "–" where there is no standard error
    (`_pm` words a finding for a sentence instead)."""
    return f"{scale * x:+.{digits}f} ± " + ("–" if e is None else f"{scale * e:.{digits}f}")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m opttree.bench.verdict",
                                description="one method against another in a bench result, paired per prompt")
    p.add_argument("result", help="an `opttree bench --out` JSON")
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--by", default="category", help="a run row's field to group by ('' for none)")
    p.add_argument("--against", metavar="RESULT", help="read B in this second bench result (the same prompts run "
                   "by another commit or setting); each speedup stays over its own run's AR")
    args = p.parse_args(argv)
    result, other = (_read(path) if path else None for path in (args.result, args.against))
    rows = pair_table(result, args.a, args.b, args.by or None, other)
    where = f"{args.result} and {args.against}" if other else args.result
    if not rows:
        raise SystemExit(f"{where}: no prompt ran both {args.a} and {args.b}")
    b = f"{args.b} of {args.against}" if other else args.b
    print(f"{args.a} against {b}, paired per prompt (mean ± one SE; speed: tokens/s ratio - 1, in %)")
    print("| group | prompts | τ difference | speed difference (%) | faster / slower |")
    print("|---|---|---|---|---|")
    for r in rows:
        tau, speed = _table_pm(r["tau"], r["tau_se"]), _table_pm(r["speed"], r["speed_se"], 100, 1)
        print(f"| {r['group']} | {r['prompts']} | {tau} | {speed} | {r['faster']} / {r['slower']} |")


def _read(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as exc:
        raise SystemExit(f"{path}: not a readable bench result ({exc})") from None


if __name__ == "__main__":
    raise SystemExit(guarded(main))
