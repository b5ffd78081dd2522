"""Theory: optimal multi-draft acceptance on the real p and q of one verified row, or on toy ones."""

from __future__ import annotations

import gradio as gr

from ui.common import PRIVATE, Page, clamp, steps_of
from viz import theory as views

INTRO = ("At every node the draft proposes some tokens and the target checks them. **How likely is it that "
         "one of k drafts is accepted, at best, and how close do real verifiers come?** Pick a node of the "
         "Explore run's current step (press **Use the Explore step** after scrubbing) to see the target's p "
         "and the draft's q recorded there, and the acceptance rate of every scheme for k = 1…8 drafts "
         "(Hu et al., ICLR 2025). Or build toy p and q with the sliders.")


def build(page: Page) -> dict:
    gr.Markdown(INTRO)
    with gr.Row():
        with gr.Column(scale=1, min_width=300):
            gr.Markdown("**A node of the Explore run**")
            use = gr.Button("Use the Explore step", variant="primary", elem_id="theory-use-step")
            node = gr.Dropdown(choices=[], value=None, label="Node (its verified row)", interactive=True,
                               elem_id="theory-node")
            gr.Markdown("**Or toy distributions**")
            d = views.TOY_DEFAULTS
            toy = dict(
                vocab=gr.Slider(2, views.TOY_MAX_VOCAB, value=d["vocab"], step=1, label="Vocabulary size",
                                elem_id="theory-vocab"),
                peak_p=gr.Slider(0, views.TOY_MAX_PEAK, value=d["peak_p"], step=0.1, label="Target peakedness",
                                 elem_id="theory-peak-p"),
                peak_q=gr.Slider(0, views.TOY_MAX_PEAK, value=d["peak_q"], step=0.1, label="Draft peakedness",
                                 elem_id="theory-peak-q"),
                mismatch=gr.Slider(0, views.TOY_MAX_MISMATCH, value=d["mismatch"], step=0.05,
                                   label="Mismatch (noise in the draft)", elem_id="theory-mismatch"),
                seed=gr.Slider(0, 100, value=d["seed"], step=1, label="Seed", elem_id="theory-seed"))
            toy_btn = gr.Button("Show toy p and q", elem_id="theory-toy")
            preset = gr.Button("Preset: without replacement beats i.i.d.", elem_id="theory-preset")
        with gr.Column(scale=3):
            dist_fig, rates_fig, text = views.toy_view()
            text_md = gr.Markdown(text, elem_id="theory-text")
            dist_plot = gr.Plot(dist_fig, label="p and q", elem_id="theory-dist")
            rates_plot = gr.Plot(rates_fig, label="Acceptance rate by number of drafts", elem_id="theory-rates")
    return dict(use=use, node=node, toy=toy, toy_btn=toy_btn, preset=preset,
                outputs=[dist_plot, rates_plot, text_md])


NO_RUN = "⚠️ There is no Explore run yet: run a prompt in Explore first. Meanwhile, the toy p and q of the sliders.\n\n"


def open_step(trace, step, *toy):
    """The Explore step's recorded rows in the node menu, and the root's view (with no run yet, the
    toy view of the sliders' values `toy`, as they stand)."""
    if not steps_of(trace):
        return (gr.Dropdown(choices=[], value=None), *views.toy_view(*toy))
    i = clamp(trace, step)
    # A run's last step may have drafted nothing (one token left: the target picks it) and so has
    # no recorded rows: show the latest step before it that has some.
    while i > 0 and not trace["steps"][i].get("topk_rows"):
        i -= 1
    choices = views.node_choices(trace, i)
    value = choices[0][1] if choices else None
    return (gr.Dropdown(choices=choices, value=value), *views.step_view(trace, i, -1))


def use_step(trace, step, *toy):
    """The button: `open_step`, saying so when there is no run to use."""
    menu, dist, rates, text = open_step(trace, step, *toy)
    return menu, dist, rates, text if steps_of(trace) else NO_RUN + text


def show_node(trace, choice):
    picked = views.parse_choice(choice)
    if picked is None or not steps_of(trace):
        return views.step_view(trace, 0, -1) if steps_of(trace) else views.toy_view()
    i, node = picked
    return views.step_view(trace, clamp(trace, i + 1), node)


def show_toy(vocab, peak_p, peak_q, mismatch, seed):
    return views.toy_view(vocab, peak_p, peak_q, mismatch, seed)


def show_preset():
    return views.preset_view()


def wire(page: Page, parts: dict, tab) -> None:
    outputs = parts["outputs"]
    opened = [parts["node"], *outputs]
    sliders = list(parts["toy"].values())
    tab.select(open_step, [page.trace, page.step, *sliders], opened, **PRIVATE)
    parts["use"].click(use_step, [page.trace, page.step, *sliders], opened, **PRIVATE)
    parts["node"].input(show_node, [page.trace, parts["node"]], outputs, **PRIVATE)
    parts["toy_btn"].click(show_toy, sliders, outputs, **PRIVATE)
    for slider in sliders:    # dragged or typed (a typed number fires no release); the latest value wins
        slider.input(show_toy, sliders, outputs, trigger_mode="always_last", **PRIVATE)
    parts["preset"].click(show_preset, None, outputs, **PRIVATE)
