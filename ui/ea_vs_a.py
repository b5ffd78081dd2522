"""E(A) vs A: every step of this session's runs, expected against actual accepted length, per method:
a density over steps and the mean A per E(A) decile (the paper's Figure 4), with binned and per-step r."""

from __future__ import annotations

import gradio as gr

from ui.common import PRIVATE, Page, history_views


def build(page: Page) -> dict:
    gr.Markdown("Every step of every run in this tab's session: the tree's expected accepted length "
                "E(A) = Σ p̂ (known before verifying) against what the target actually accepted A, per method "
                "and drafter, sampled runs apart from greedy ones (at their temperature and filters) and runs "
                "whose draft probabilities were rescaled apart by their tree temperature. "
                "The shading counts steps; the black diamonds are the mean A in each tenth of the steps "
                "ordered by E(A) (bars: standard error), the dashed line A = E(A). A is a whole number per "
                "step, so single steps scatter; the means show whether E(A) predicts A, which is why "
                "maximising E(A) is a good way to pick the tree.")
    fig, text = history_views([])
    page.ea_text = gr.Markdown(text, elem_id="ea-r")
    page.ea_plot = gr.Plot(fig, label="E(A) vs A", elem_id="ea-plot")
    return dict(clear=gr.Button("Clear", size="sm"))


def clear():
    return ([], *history_views([]))


def wire(page: Page, parts: dict) -> None:
    parts["clear"].click(clear, None, [page.history, page.ea_plot, page.ea_text], **PRIVATE)
