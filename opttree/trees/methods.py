"""Method name -> tree builder. Every builder is a pure function of the draft distributions that
`expand` returns, so tests drive them with synthetic distributions and no model."""

from __future__ import annotations

from opttree.config import DecodeConfig
from opttree.trees.draft_tree import DraftTree
from opttree.trees.eagle_dynamic import build_eagle_dynamic
from opttree.trees.opt_tree import build_opt_tree
from opttree.trees.static import build_static, shape_paths


def build_tree(expand, cfg: DecodeConfig) -> tuple[DraftTree, dict]:
    if cfg.method == "ar":
        return DraftTree(), {"ea_by_depth": [0.0], "stop_reason": "autoregressive: no draft"}
    if cfg.method == "opt-tree":
        return build_opt_tree(expand, cfg.nodes, cfg.threshold, cfg.max_depth)
    if cfg.method == "eagle-dynamic":
        return build_eagle_dynamic(expand, cfg.nodes, cfg.max_depth, cfg.eagle_top_k)
    return build_static(expand, shape_paths(cfg.method, cfg.nodes, cfg.max_depth), cfg.nodes)
