"""Learn: the ideas one folded section per topic, the Explore step mirrored live, and one-click lessons."""

from __future__ import annotations

import gradio as gr

from ui.common import PRIVATE, Page, clamp, step_figure
from viz import lessons
from viz.tree_figure import tree_figure


def build(page: Page) -> dict:
    with gr.Row():
        with gr.Column(scale=2, elem_id="learn-topics"):
            for i, (title, body) in enumerate(lessons.learn_sections()):
                with gr.Accordion(title, open=i == 0, elem_id=f"learn-topic-{i}"):
                    gr.Markdown(body)
        with gr.Column(scale=3):
            page.learn_status = gr.Markdown("")
            page.learn_plot = gr.Plot(tree_figure(None), label="Live tree (the step selected in Explore)",
                                      elem_id="learn-plot")
            gr.Markdown("**Try a lesson** — each button sets the prompt and settings and runs it; its caption "
                        "then shows above the tree in Explore:")
            with gr.Column(elem_id="learn-lessons"):
                presets = [gr.Button(p["name"], size="sm", min_width=0, elem_id=f"learn-preset-{i}")
                           for i, p in enumerate(lessons.PRESETS)]
            with gr.Accordion("What each lesson shows", open=False, elem_id="learn-captions"):
                gr.Markdown("\n".join(f"- **{p['name']}**: {p['lesson']}" for p in lessons.PRESETS))
    return dict(presets=presets)


def mirror(trace, step, colour):
    return step_figure(trace, clamp(trace, step), "learn", colour)


def wire(page: Page, tab) -> None:
    tab.select(mirror, [page.trace, page.step, page.colour], page.learn_plot, **PRIVATE)
