"""PNG charts for benchmark and sweep results (matplotlib, headless)."""

from __future__ import annotations

import math
from pathlib import Path

from opttree.calibration import calibrate
from opttree.errors import BadInput


def _plt():
    try:
        import matplotlib  # only the plotting commands need matplotlib
    except ImportError:
        raise BadInput("PNG charts need matplotlib: pip install -r requirements.txt") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # only the plotting commands need matplotlib

    return plt


def _subtitle(meta: dict) -> str:
    m = meta.get("machine", {})
    dev = m.get("gpu") or f"{m.get('cpu', '?')}, {m.get('torch_threads', '?')} threads"
    cfg = meta.get("config", {})
    return (f"{meta.get('target', '?')} + {meta.get('drafter', '?')} draft · {dev} · "
            f"T={cfg.get('temperature', '?')}, {cfg.get('max_new_tokens', '?')} new tokens, "
            + (f"n={cfg['nodes'] or 'auto'}" if "nodes" in cfg else f"n∈{meta.get('budgets', '?')}")
            + f" · {m.get('date_utc', '')}")


def plot_bench(result: dict, path) -> str:
    plt = _plt()
    methods = list(result["methods"])
    tau = [result["methods"][m]["tau"] for m in methods]
    speed = [result["methods"][m]["speedup"] or 0.0 for m in methods]
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.6))
    colors = ["#888888" if m == "ar" else "#d98c1f" if m.startswith("hf") else
              "#2a7ab9" if m.startswith("opt-tree") else "#7fb3d5" for m in methods]
    for ax, vals, title, ref in ((axes[0], tau, "τ: tokens per target forward", 1.0),
                                 (axes[1], speed, "speedup over AR (tokens/s ratio, same run)", 1.0)):
        bars = ax.bar(methods, vals, color=colors)
        ax.axhline(ref, color="black", lw=0.8, ls="--")
        ax.set_title(title)
        for b, v in zip(bars, vals):
            ax.text(b.get_x() + b.get_width() / 2, v, f"{v:.2f}", ha="center", va="bottom", fontsize=9)
        ax.tick_params(axis="x", rotation=30)
    fig.suptitle(_subtitle(result["meta"]), fontsize=9)
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return str(path)


def plot_node_sweep(sweep: dict, folder, stem: str = "sweep") -> list[str]:
    """τ vs nodes and speedup vs nodes, one line per method."""
    plt = _plt()
    out = []
    curves = sweep["nodes"]["curves"]
    for key, label, fname in (("tau", "τ (tokens per target forward)", f"{stem}_tau_vs_nodes.png"),
                              ("speedup", "speedup over AR (same run)", f"{stem}_speedup_vs_nodes.png")):
        fig, ax = plt.subplots(figsize=(6.4, 4.4))
        for method, pts in curves.items():
            xs = [p["nodes"] for p in pts]
            ys = [p[key] if p[key] is not None else float("nan") for p in pts]
            line = ax.plot(xs, ys, marker="o", label=f"{method} (measured)" if key == "speedup" else method,
                           lw=2.2 if method == "opt-tree" else 1.3)[0]
            if key == "speedup" and any(p.get("predicted_speedup") is not None for p in pts):
                ax.plot(xs, [p.get("predicted_speedup") or float("nan") for p in pts], ls="--", marker=".",
                        color=line.get_color(), label=f"{method} (predicted from verify cost)")
        ax.axhline(1.0, color="black", lw=0.8, ls="--")
        ax.set_xscale("log")
        ax.set_xlabel("node budget n")
        ax.set_ylabel(label)
        ax.legend(fontsize=7)
        ax.set_title(_subtitle(sweep["meta"]), fontsize=7)
        fig.tight_layout()
        path = Path(folder) / fname
        fig.savefig(path, dpi=110)
        plt.close(fig)
        out.append(str(path))
    return out


def plot_threshold_sweep(sweep: dict, folder, stem: str = "sweep") -> str | None:
    pts = sweep.get("threshold", {}).get("points") or []
    if not pts:
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    xs = [p["threshold"] for p in pts]
    ax.plot(xs, [p["tau"] for p in pts], marker="o", label="τ")
    ax.plot(xs, [p["speedup"] or float("nan") for p in pts], marker="s", label="speedup over AR")
    ax.plot(xs, [p["mean_depth"] for p in pts], marker="^", label="mean depth", ls=":")
    ax.set_xscale("symlog", linthresh=0.1)
    ax.set_xlabel("δ (deepen while E(A) grows by more than δ)")
    ax.set_title(f"OPT-Tree, n={sweep['threshold']['nodes']} · " + _subtitle(sweep["meta"]), fontsize=7)
    ax.legend()
    fig.tight_layout()
    path = Path(folder) / f"{stem}_threshold.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return str(path)


def plot_ea_vs_a(pairs_by_method: dict, path, meta: dict, stats: dict | None = None) -> str:
    """Per method, as the paper's Figure 4 reads: the density of (E(A), A) over steps, the mean A per
    E(A) decile with its standard error, and A = E(A); each panel titled with the binned r, the
    slope and the per-step r (opttree/calibration.py)."""
    plt = _plt()
    methods = [m for m, pts in pairs_by_method.items() if pts]
    cols = min(3, max(len(methods), 1))
    rows = max(1, math.ceil(len(methods) / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(4.6 * cols, 4.2 * rows), squeeze=False)
    for ax in axes.flat[len(methods):]:
        ax.axis("off")
    total = 0
    for ax, method in zip(axes.flat, methods):
        pts = pairs_by_method[method]
        total += len(pts)
        xs, ys = [p[0] for p in pts], [p[1] for p in pts]
        cal = (stats or {}).get(method) or calibrate(xs, ys)
        top = max(max(xs), max(ys), 1.0)
        ax.hist2d(xs, ys, bins=[20, [y - 0.5 for y in range(int(max(ys)) + 2)]], cmap="Blues", cmin=1)
        bins = cal["bins"]
        ax.errorbar([b["ea"] for b in bins], [b["a"] for b in bins], yerr=[b["sem"] for b in bins], color="black",
                    marker="D", ms=4, lw=1.3, capsize=2, label="mean A per E(A) decile (± s.e.)")
        ax.plot([0, top], [0, top], color="#777", lw=0.8, ls="--", label="A = E(A)")

        def num(x):
            return f"{x:.3f}" if isinstance(x, (int, float)) else "n/a"

        r1 = cal.get("per_step_r", cal.get("pearson_r"))
        ax.set_title(f"{method}: binned r {num(cal['binned_r'])}, slope {num(cal['slope'])}\n"
                     f"per-step r {num(r1)}, {len(pts)} steps", fontsize=8)
        ax.set_xlabel("E(A) = Σ p̂ over the tree (predicted)")
        ax.set_ylabel("A = accepted draft tokens (measured)")
        ax.legend(fontsize=6, loc="upper left")
    fig.suptitle(f"E(A) vs A over {total} steps (density, decile means) · " + _subtitle(meta), fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return str(path)


def plot_cost_curve(curve: dict, path) -> str:
    """The decoder's cost curve (engine/cost.py): target forward vs tokens, draft layer vs width."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    pts = curve["points"]
    xs = [p["tokens"] for p in pts]
    ax.plot(xs, [p["median_ms"] for p in pts], marker="o", label="target forward over k tokens (verify)")
    ax.fill_between(xs, [p["p25_ms"] for p in pts], [p["p75_ms"] for p in pts], alpha=0.2)
    longer = curve.get("longer")
    if longer:
        ax.plot([p["tokens"] for p in longer["points"]], [p["median_ms"] for p in longer["points"]], marker="o",
                linestyle="--", color="C0", label=f"the same after a {longer['prefix_tokens']}-token prefix")
    draft = curve.get("draft")
    if draft:
        ws = [p["width"] for p in draft["points"]]
        ax.plot(ws, [p["median_ms"] for p in draft["points"]], marker="s", color="#d98c1f",
                label=f"one draft layer over w nodes (+ {draft['base_ms']:.1f} ms per step)")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("tokens per forward / nodes per draft layer")
    ax.set_ylabel("ms (median)")
    key = curve["key"]
    ax.set_title(f"what a forward costs here: {key['target']} ({key['dtype']}), {key['device_name']}, "
                 f"{key['threads']} threads\nKV prefix {curve['prefix_tokens']} · {curve['measured_utc']}", fontsize=8)
    ax.legend(fontsize=8)
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return str(path)


def plot_verify_cost(cost: dict, path) -> str:
    plt = _plt()
    pts = cost["points"]
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    xs = [p["tokens"] for p in pts]
    kernel = cost["meta"].get("kernel", "default")
    ax.plot(xs, [p["median_ms"] for p in pts], marker="o",
            label="target forward (median)" + (", engine's CPU kernels" if kernel == "few-row" else ""))
    ax.fill_between(xs, [p["p25_ms"] for p in pts], [p["p75_ms"] for p in pts], alpha=0.2)
    if "plain_median_ms" in pts[0]:  # the same forward with plain F.linear (few_row_linear.py)
        ax.plot(xs, [p["plain_median_ms"] for p in pts], marker="x", color="#888888", ls=":",
                label="same, plain F.linear kernel")
    for key, label, marker, color in (("onednn_only", "oneDNN", "^", "#4a7ab0"),
                                      ("mkl_only", "MKL packed GEMM", "v", "#4ab07a")):
        if f"{key}_median_ms" in pts[0]:  # one kernel at every row count (nets/kernel_choice.py)
            ax.plot(xs, [p[f"{key}_median_ms"] for p in pts], marker=marker, color=color, ls=":",
                    label=f"same, {label} kernel at every row count")
    if "copy_kv_median_ms" in pts[0]:  # the same forward copying the KV heads (grouped_attention.py)
        ax.plot(xs, [p["copy_kv_median_ms"] for p in pts], marker="+", color="#b04a4a", ls="-.",
                label="same, KV heads copied (transformers' SDPA)")
    ax2 = ax.twinx()
    ax2.plot(xs, [p["relative"] for p in pts], color="#d98c1f", ls="--", marker=".", label="× one-token forward")
    ax2.set_ylabel("relative to a 1-token forward")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")  # the few-token end, where the kernels differ, stays readable
    ax.set_xlabel("tokens in the verified tree (root included)")
    ax.set_ylabel("ms per target forward")
    m = cost["meta"]["machine"]
    dev = m.get("gpu") or f"{m.get('cpu')}, {m.get('torch_threads')} threads"
    ax.set_title(f"verify cost: {cost['meta']['target']} ({cost['meta']['dtype']}) on {dev}\n"
                 f"KV prefix {cost['meta']['prefix_tokens']} tokens · {m.get('date_utc', '')}", fontsize=8)
    lines = ax.get_legend_handles_labels()
    lines2 = ax2.get_legend_handles_labels()
    ax.legend(lines[0] + lines2[0], lines[1] + lines2[1], loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return str(path)
