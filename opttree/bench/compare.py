"""What one comparison runs: the app's Compare tab and `python -m opttree bench` share this plan.

A comparison is a benchmark (`harness.run_bench`: a warm-up run of every method, then every method on
every prompt, interleaved and rotated) over the visitor's prompt and a built-in set
(`paths.COMPARE_PROMPTS`: chat, maths, code, a given passage), with OPT-Tree and each chosen static
shape at several fixed node budgets and at the auto budget, so that two lessons come from the same
runs: which shape accepts more at the same budget (τ against n) and what is fastest on this machine
(speed against n, the auto budget marked). Its verdict is `verdict.verdict` of the result, the same
function `make bench`'s report and the bench command print. `bench_command` writes the command line
that runs the same comparison outside the app; `python -m opttree.bench.compare PROMPT` prints it for
the tab's defaults (`make bench STEP=compare` runs it).
"""

from __future__ import annotations

import shlex
import sys

from opttree import paths
from opttree.bench.harness import parse_spec
from opttree.bench.prompts import BenchPrompt, read_prompts, with_given
from opttree.bench.verdict import spread, verdict
from opttree.config import AUTO_NODES, MODEL_DRAFTERS, SETTINGS, TRAINING_FREE, app_defaults, flag
from opttree.errors import guarded
from opttree.trees.static import shape_paths

BUDGETS = (4, 10, 25, 60)          # the fixed node budgets τ is measured at (the paper's n = 25 and 60 among them)
TOKENS = 16                        # new tokens per run: 5 prompts × 16 methods × 16 tokens ≈ a minute on 2 CPU cores
STATICS = ("binary", "eagle-static")
ALL, ONE = "all", "one"            # the prompts: the visitor's and the built-in set, or the visitor's alone
# Rows beside the trees (at the auto budget): retrieval fusion and the allow-list's other drafters.
EXTRAS = {"opt-tree + retrieval": "opt-tree@auto+retrieval", "recycling": "recycling:opt-tree@auto",
          "lookup": "lookup:opt-tree@auto", "early-exit": "early-exit:opt-tree@auto"}
STATIC_SHAPES = ("chain", "binary", "eagle-static", "tr-static")   # shapes with a fixed size (shape_paths)


def builtin_prompts() -> list[BenchPrompt]:
    return read_prompts(paths.COMPARE_PROMPTS)


def compare_prompts(prompt: str, scope: str = ALL) -> list[BenchPrompt]:
    """The visitor's prompt first (id "prompt"), then, unless `scope` is ONE, the built-in set."""
    return with_given([prompt], [] if scope == ONE else builtin_prompts())


def compare_methods(statics=STATICS, budgets=BUDGETS, extras=()) -> list[str]:
    """Bench method names: AR, then OPT-Tree and each static shape at each fixed budget (smallest first)
    and at the auto budget, then each extra row (EXTRAS' keys) at the auto budget."""
    fixed = sorted({int(b) for b in budgets if int(b) != AUTO_NODES})
    out = ["ar"]
    for budget in [*map(str, fixed), "auto"]:
        out += [f"{m}@{budget}" for m in ("opt-tree", *statics)]
    return out + [EXTRAS[e] for e in extras if e in EXTRAS]


def budget_label(method: str) -> str:
    """'n = 25', 'auto' or '' (AR) for a bench method name."""
    if method == "ar":
        return ""
    nodes = parse_spec(method).nodes
    return "auto" if nodes in (None, AUTO_NODES) else f"n = {nodes}"


def capacity(method: str, max_depth: int) -> int | None:
    """How many nodes a static shape holds at the method's fixed budget (EAGLE-25 at n = 60: 25), where
    that is fewer than the budget; None for a shape that fills it or an adaptive one."""
    spec = parse_spec(method)
    if spec.method not in STATIC_SHAPES or not spec.nodes:
        return None
    held = len(shape_paths(spec.method, spec.nodes, max_depth))
    return held if held < spec.nodes else None


def shape_name(method: str) -> str:
    """A row's name without its budget: 'opt-tree', 'binary', 'recycling · opt-tree', 'opt-tree + retrieval'."""
    if method == "ar":
        return "ar"
    spec = parse_spec(method)
    name = f"{spec.drafter} · {spec.method}" if spec.drafter else spec.method
    return name + (" + retrieval" if spec.retrieval else "")


AGGREGATE_KEYS = ("tokens_per_s", "exact_match", "mean_nodes", "mean_depth", "mean_accepted_draft_tokens",
                  "draft_acceptance_rate", "mean_draft_ms", "mean_build_ms", "mean_verify_ms", "mean_prefill_ms")


def summary(result: dict) -> dict:
    """A benchmark result as plain data for the Compare tab's views: per method its shape, budget (None for
    AR, 0 for auto), the nodes a static shape holds when fewer than the budget, mean τ and speedup over
    prompts with their standard errors (`verdict.spread`), the aggregate's other figures; the verdict; and
    the runs' mean KV prefix (`context_tokens`: prompt plus half the output), where the cost is read."""
    meta = result["meta"]
    stats = spread(result["runs"])
    rows = []
    for m in meta["methods"]:
        spec = None if m == "ar" else parse_spec(m)
        budget = None if spec is None else (meta["config"]["nodes"] if spec.nodes is None else spec.nodes)
        st, agg = stats.get(m, {}), result["methods"].get(m, {})
        rows.append({"method": m, "shape": shape_name(m), "budget": budget,
                     "capacity": capacity(m, meta["config"]["max_depth"]),
                     **{k: st.get(k) for k in ("tau", "tau_se", "speedup", "speedup_se", "prompts")},
                     **{k: agg.get(k) for k in AGGREGATE_KEYS}})
        # Accepted draft tokens per step as τ is: per prompt, then averaged (pooled over steps, prompts that
        # take many short steps would weigh more, and τ − 1 and this column would part).
        if st.get("accepted") is not None:
            rows[-1]["mean_accepted_draft_tokens"] = round(st["accepted"], 3)
    # The KV prefix a step read, on average: each run's prompt plus half its output.
    contexts = [r["prompt_tokens"] + r.get("new_tokens", 0) / 2 for r in result["runs"] if r.get("prompt_tokens")]
    return {"rows": rows, "prompts": meta["prompts"], "verdict": verdict(result), "cost": meta.get("cost"),
            "context_tokens": round(sum(contexts) / len(contexts), 1) if contexts else None,
            "stopped_early": meta.get("stopped_early"), "greedy": not meta["config"].get("temperature"),
            "wall_s": meta.get("bench_wall_s"), "load": meta["machine"].get("load_avg_at_start")}


def bench_command(prompt: str, scope: str, methods: list[str], settings: dict, drafter: str | None = None,
                  target: str | None = None) -> str:
    """The command line that runs the same comparison (same prompts, methods and settings) through the
    same harness and prints the same verdict."""
    cmd = ["python", "-m", "opttree", "bench", "--prompt", prompt]
    if scope != ONE:
        cmd += ["--prompts", str(paths.COMPARE_PROMPTS.relative_to(paths.PACKAGE.parent))]
    if target:
        cmd += ["--target", target]
    if drafter in (*MODEL_DRAFTERS, *TRAINING_FREE) and drafter != "eagle":
        cmd += ["--drafter", drafter]
    cmd += ["--methods", ",".join(methods)]
    for name, value in settings.items():
        if name in ("method", "nodes") or name not in SETTINGS or value == SETTINGS[name].default:
            continue
        cmd += [flag(name), str(value)]
    return shlex.join(cmd)


def main(argv=None) -> int:
    """Print the bench command of the Compare tab at its defaults for a prompt (`--one`: that prompt only)."""
    args = list(sys.argv[1:] if argv is None else argv)
    scope = ONE if "--one" in args else ALL
    words = [a for a in args if a != "--one"]
    if len(words) != 1:
        print("usage: python -m opttree.bench.compare PROMPT [--one]", file=sys.stderr)
        return 2
    settings = {**app_defaults(), "max_new_tokens": TOKENS, "retrieval": "off"}
    print(bench_command(words[0], scope, compare_methods(), settings))
    return 0


if __name__ == "__main__":
    raise SystemExit(guarded(main))
