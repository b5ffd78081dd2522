"""Method name -> tree builder. Every builder is a pure function of the draft distributions that
`expand` returns, so tests drive them with synthetic distributions and no model."""

from __future__ import annotations

from opttree.config import AUTO_MAX_NODES, DecodeConfig
from opttree.trees.auto_size import StepCost
from opttree.trees.draft_tree import DraftTree
from opttree.trees.eagle_dynamic import build_eagle_dynamic
from opttree.trees.opt_tree import build_opt_tree, build_opt_tree_auto
from opttree.trees.static import build_static, shape_paths


def build_tree(expand, cfg: DecodeConfig, cost: StepCost | None = None) -> tuple[DraftTree, dict]:
    """The step's tree. With the auto budget (`cfg.auto_nodes`) the size comes from `cost`, the
    machine's measured costs (auto_size.py), up to AUTO_MAX_NODES nodes."""
    if cfg.method == "ar":
        return DraftTree(), {"ea_by_depth": [0.0], "stop_reason": "autoregressive: no draft"}
    if cfg.auto_nodes and cost is None:
        raise ValueError("the auto node budget needs the machine's cost curve")
    n = AUTO_MAX_NODES if cfg.auto_nodes else cfg.nodes
    auto = cost if cfg.auto_nodes else None
    if cfg.method == "opt-tree":
        if auto is not None:
            return build_opt_tree_auto(expand, auto, n, cfg.max_depth)
        return build_opt_tree(expand, n, cfg.threshold, cfg.max_depth)
    if cfg.method == "eagle-dynamic":
        return build_eagle_dynamic(expand, n, cfg.max_depth, cfg.eagle_top_k, auto)
    return build_static(expand, shape_paths(cfg.method, n, cfg.max_depth), n, auto)
