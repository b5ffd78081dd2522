"""Method name -> tree builder. Every builder is a pure function of the draft distributions that
`expand` returns, so tests drive them with synthetic distributions and no model."""

from __future__ import annotations

from opttree.config import AUTO_MAX_NODES, DecodeConfig
from opttree.trace import BuildInfo
from opttree.trees.auto_size import StepCost
from opttree.trees.draft_tree import DraftTree
from opttree.trees.eagle_dynamic import build_eagle_dynamic
from opttree.trees.opt_tree import build_opt_tree, build_opt_tree_auto
from opttree.trees.sequoia import DEFAULT_ACCEPTANCE, build_sequoia
from opttree.trees.static import build_static, shape_paths


def build_tree(expand, cfg: DecodeConfig, cost: StepCost | None = None, acceptance=None,
               paths=None, shape_depth: int | None = None) -> tuple[DraftTree, BuildInfo]:
    """The step's tree. With the auto budget (`cfg.auto_nodes`) the size comes from `cost`, the
    machine's measured costs (auto_size.py), up to AUTO_MAX_NODES nodes.

    `acceptance`: the draft's positional acceptance vector (plain numbers, trees/sequoia.py), which
    Sequoia's tree is optimal for; None: DEFAULT_ACCEPTANCE. `paths`: a static shape given as rank
    paths in level order (an exported tree measured as it is); it replaces the method's own tree,
    cut to the budget and max depth (and, under the auto budget, where the objective peaks).
    `shape_depth`: the run's max depth where `cfg.max_depth` is lower only because few tokens are left;
    a static tree is built for it and cut at `cfg.max_depth`, as a serving engine cuts its fixed tree
    (built for the lower depth, Sequoia's optimum and Token Recycling's template would differ)."""
    if cfg.method == "ar":
        return DraftTree(), BuildInfo(stop_reason="autoregressive: no draft")
    if cfg.auto_nodes and cost is None:
        raise ValueError("the auto node budget needs the machine's cost curve")
    n = AUTO_MAX_NODES if cfg.auto_nodes else cfg.nodes
    auto = cost if cfg.auto_nodes else None
    if paths is not None:
        shape = [tuple(p) for p in paths if len(p) <= cfg.max_depth][:n]
        tree, info = build_static(expand, shape, n, auto)
        if auto is None:
            info.stop_reason = f"the given static shape ({len(shape)} nodes)"
        return tree, info
    if cfg.method == "opt-tree":
        if auto is not None:
            return build_opt_tree_auto(expand, auto, n, cfg.max_depth)
        return build_opt_tree(expand, n, cfg.threshold, cfg.max_depth)
    if cfg.method == "eagle-dynamic":
        return build_eagle_dynamic(expand, n, cfg.max_depth, cfg.eagle_top_k, auto)
    if cfg.method == "sequoia":
        return build_sequoia(expand, DEFAULT_ACCEPTANCE if acceptance is None else acceptance, n, cfg.max_depth,
                             auto, shape_depth)
    shape = shape_paths(cfg.method, n, max(shape_depth or 0, cfg.max_depth))
    return build_static(expand, [p for p in shape if len(p) <= cfg.max_depth], n, auto)
