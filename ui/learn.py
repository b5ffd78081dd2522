"""Learn: the ideas in a few paragraphs, one-click lessons, and the Explore step mirrored live."""

from __future__ import annotations

import gradio as gr

from ui.common import PRIVATE, Page, clamp, step_figure
from viz import lessons
from viz.tree_figure import tree_figure


def build(page: Page) -> dict:
    with gr.Row():
        with gr.Column(scale=2):
            gr.Markdown(lessons.LEARN_TEXT)
        with gr.Column(scale=3):
            gr.Markdown("**Try a lesson** — each button sets the prompt and sliders and runs it:")
            presets = []
            for i, p in enumerate(lessons.PRESETS):
                with gr.Row(equal_height=True):
                    presets.append(gr.Button(p["name"], size="sm", scale=1, min_width=170,
                                             elem_id=f"learn-preset-{i}"))
                    gr.Markdown(p["lesson"], container=False)
            page.learn_status = gr.Markdown("")
            page.learn_plot = gr.Plot(tree_figure(None), label="Live tree (the step selected in Explore)",
                                      elem_id="learn-plot")
    return dict(presets=presets)


def mirror(trace, step, colour):
    return step_figure(trace, clamp(trace, step), "learn", colour)


def wire(page: Page, tab) -> None:
    tab.select(mirror, [page.trace, page.step, page.colour], page.learn_plot, **PRIVATE)
