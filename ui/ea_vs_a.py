"""E(A) vs A: every step of this session's runs, expected against actual accepted length."""

from __future__ import annotations

import gradio as gr

from ui.common import PRIVATE, Page, history_views


def build(page: Page) -> dict:
    gr.Markdown("Every step of every run in this tab's session: the tree's expected accepted length "
                "E(A) = Σ p̂ (known before verifying) against what the target actually accepted. "
                "A strong correlation is why maximising E(A) is a good way to pick the tree.")
    fig, text = history_views([])
    page.ea_text = gr.Markdown(text, elem_id="ea-r")
    page.ea_plot = gr.Plot(fig, label="E(A) vs A", elem_id="ea-plot")
    return dict(clear=gr.Button("Clear", size="sm"))


def clear():
    return ([], *history_views([]))


def wire(page: Page, parts: dict) -> None:
    parts["clear"].click(clear, None, [page.history, page.ea_plot, page.ea_text], **PRIVATE)
