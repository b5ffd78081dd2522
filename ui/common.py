"""What every tab shares: the per-session state, step arithmetic, safe text and the scrubber views."""

from __future__ import annotations

import inspect
import typing
from dataclasses import dataclass, field

import gradio as gr

from opttree.trace import counted
from viz.metrics import step_metrics
from viz.step_charts import accept_bars, ea_density, speed_note, why_shape
from viz.style import md_text
from viz.text_view import text_html
from viz.tree_figure import root_context, step_title, tree_figure

HISTORY_RUNS = 200     # E(A)-vs-A runs kept per browser session (oldest dropped first)

# A delegated listener: the HTML is re-rendered on every update, the container element is not.
TOKEN_CLICK_JS = """
element.addEventListener('click', (e) => {
  const t = e.target.closest('[data-step]');
  if (t) trigger('click', {step: parseInt(t.dataset.step, 10)});
});
"""

PRIVATE = dict(queue=False, api_visibility="private")   # pure view updates: never wait behind a model run
# Events that read a step scrubber take its raw value: gr.Slider refuses a typed step past either end
# before the handler runs (each view then shows a bare "Error"), and `clamp` makes any value a step.
SCRUB = dict(PRIVATE, preprocess=False)
# Stop is a queued event of its own (no concurrency limit: it never waits behind a run), so that with
# nothing running it can say so in a toast (Gradio shows gr.Info for queued events only) and leave the
# status, the last run's outcome, alone.
STOP_EVENT = dict(concurrency_id="stop", concurrency_limit=None, show_progress="hidden")


@dataclass
class Page:
    """Components that more than one tab reads or writes (filled in as the tabs are built)."""

    trace: gr.State = None          # the Explore run (a trace dict)
    history: gr.State = None        # E(A)-vs-A points of this session's runs
    settings: dict = field(default_factory=dict)   # setting name -> control (ui/controls.py)
    colour: gr.Radio = None         # what tree node colour shows (viz/style.py COLOUR_MODES)
    present: gr.Checkbox = None     # presenter mode: larger type, the step on one screen (assets/app.css)
    caption: gr.Markdown = None     # the lesson shown above the tree while its run is on screen
    link: gr.State = None           # what the page's URL asked for (ui/links.py), until a run uses it
    ran: gr.State = None            # what the shown run ran with (pair, prompt, settings): Copy link writes it
    link_box: gr.Textbox = None     # the link Copy link wrote (shown once copied)
    model: gr.Dropdown = None
    prompt: gr.Textbox = None
    status: gr.Markdown = None
    step: gr.Slider = None
    tree_title: gr.Textbox = None   # Explore's tree title alone, while a live run leaves the tree pinned
    views: list = field(default_factory=list)      # tree, text, metrics, why: move with the scrubber
    bars: gr.Plot = None
    learn_plot: gr.Plot = None
    learn_status: gr.Markdown = None
    ea_plot: gr.Plot = None
    ea_text: gr.Markdown = None

    @property
    def run_views(self) -> list:
        return [*self.views, self.bars, self.learn_plot]


def bind(fn, *first, names=()):
    """`fn` with its first arguments fixed, as a plain function Gradio can inspect.

    Gradio reads a handler's signature and type hints (to pass gr.Request, to stream generators), which
    `functools.partial` hides; this keeps both, so handlers can live at module level. Gradio's API names
    each input after the handler's parameter (a `*values` one it calls `param_N`): `names`, every input's
    name in order (e.g. an event's inputs dict), gives each of them its own parameter in the signature."""
    sig = inspect.signature(fn)
    params = list(sig.parameters.values())[len(first):]
    hints = typing.get_type_hints(fn)
    if names:
        params = _named(params, hints, list(names))
    call = sig.replace(parameters=params)

    def arguments(args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        if names:     # every input positionally: `fn` collects the named ones in its `*values`
            return call.bind(*args, **kwargs).args, {}
        return args, kwargs

    if inspect.isgeneratorfunction(fn):
        def bound(*args, **kwargs):
            args, kwargs = arguments(args, kwargs)
            yield from fn(*first, *args, **kwargs)
    else:
        def bound(*args, **kwargs):
            args, kwargs = arguments(args, kwargs)
            return fn(*first, *args, **kwargs)
    bound.__name__ = bound.__qualname__ = fn.__name__
    bound.__doc__ = fn.__doc__
    bound.__signature__ = call
    bound.__annotations__ = {k: v for k, v in hints.items() if k in {p.name for p in params} or k == "return"}
    return bound


def _named(params: list, hints: dict, names: list[str]) -> list:
    """`params` with its `*values` replaced by one positional parameter per input it collects."""
    P = inspect.Parameter
    at = next(i for i, p in enumerate(params) if p.kind == P.VAR_POSITIONAL)
    own = [p.name for p in params[:at] if hints.get(p.name) not in (gr.Request, gr.EventData)]
    if names[:len(own)] != own:
        raise ValueError(f"inputs named {names[:len(own)]} where {own} were expected")
    return [*params[:at], *(P(n, P.POSITIONAL_OR_KEYWORD) for n in names[len(own):]), *params[at + 1:]]


def steps_of(trace) -> int:
    return len((trace or {}).get("steps", []))


def last_tree_step(trace) -> int:
    """The 0-based index of the step a finished run's view lands on: its last step that drafted a tree
    with the whole max depth open. A run's last step often has one token left, which the target picks
    alone (an empty tree teaches nothing), and the steps before it have their depth capped by the tokens
    left, so a builder spends the budget on a fan one or two layers deep, unlike the run's other trees.
    Where no step had the whole depth, the last step with a tree; where none drafted, the last step."""
    steps = (trace or {}).get("steps", [])
    meta = (trace or {}).get("meta", {})
    left, max_depth = meta.get("max_new_tokens"), meta.get("max_depth")
    full = []           # whether each step's depth was left uncapped by the tokens still to generate
    for s in steps:
        full.append(isinstance(left, int) and isinstance(max_depth, int) and left - 1 >= max_depth)
        left = left - len(s.get("committed", [])) if isinstance(left, int) else left
    drafted = [i for i, s in enumerate(steps) if s.get("tokens")]
    return next((i for i in reversed(drafted) if full[i]), drafted[-1] if drafted else max(len(steps) - 1, 0))


def bounded(value, lo: int, hi: int, fallback: int) -> int:
    """A typed or dragged number as a whole number in lo..hi; `fallback` for junk (text, NaN, infinity)."""
    try:
        return max(lo, min(int(float(value)), hi))
    except (TypeError, ValueError, OverflowError):
        return fallback


def whole_number(text) -> int | None:
    """`text` as a whole number where it is one written in the digits 0-9 ('12'), else None: a visitor's text
    (a link's step, an API's budget). str.isdigit() alone also passes '²', which int() refuses, as it refuses
    more than 4,300 digits."""
    text = str(text)
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 100 else None


def clamp(trace, step) -> int:
    """0-based step index from a 1-based slider value (any junk becomes a valid index)."""
    n = steps_of(trace)
    return bounded(step, 1, n, n) - 1 if n else 0


def session_of(request) -> str | None:
    return getattr(request, "session_hash", None) if request is not None else None


def slider_update(trace, index: int):
    n = steps_of(trace)
    # Gradio needs maximum > minimum; a one-step run shows 1..2 and the view clamps to step 1.
    return gr.Slider(minimum=1, maximum=max(n, 2), value=index + 1 if n else 1, step=1, interactive=n > 1)


def step_figure(trace, index: int, uirevision: str, colour: str = "log_p_hat", present: bool = False):
    """The tree of step `index`, its root labelled with the end of the text the step continues."""
    steps = (trace or {}).get("steps", [])
    if not steps:
        return tree_figure(None, uirevision=uirevision, colour=colour, present=bool(present))
    return tree_figure(steps[index], step_title(trace, index), uirevision=uirevision, colour=colour,
                       context=root_context(trace, index), present=bool(present))


def step_views(trace, index: int, colour: str = "log_p_hat", present: bool = False):
    """What moves with the scrubber: tree, text, metrics and the why-curve.

    The accepted-length bars and the Learn tab's mirror are redrawn per run (and when the Learn tab
    opens), not per scrub: every extra Plotly figure adds visible latency to each step."""
    steps = (trace or {}).get("steps", [])
    step = steps[index] if steps else None
    meta = (trace or {}).get("meta", {})
    at = index if steps else None
    return (step_figure(trace, index, "explore", colour, present), text_html(trace, at),
            step_metrics(trace, at) + speed_note(trace, at), why_shape(step, meta))


def run_views(trace, index: int, colour: str = "log_p_hat", present: bool = False, bars: bool = True):
    """Scrubber views plus the per-run ones: accepted-length bars (left as they are, unbuilt, without
    `bars`: a live run draws them at its end) and the Learn tab's mirror tree."""
    return (*step_views(trace, index, colour, present), accept_bars(trace, None) if bars else gr.skip(),
            step_figure(trace, index, "learn", colour))


def history_views(history):
    """The E(A)-vs-A tab: per method, the density of (E(A), A) and the binned calibration."""
    fig, stats = ea_density(history or [])
    n = sum(st["steps"] for st in stats.values())
    if not n:
        return fig, "No steps yet: run a few prompts (Explore or Compare) to fill this plot."

    def num(x):
        return f"{x:.3f}" if isinstance(x, (int, float)) else "n/a"

    lines = [f"{counted(n, 'step')} that drafted a tree, of {counted(len(history), 'run')}. **Binned r**: Pearson r "
             "between mean E(A) and mean A over "
             "E(A) deciles (what the paper's Figure 4 shows); **slope**: mean A per unit of E(A) (1 = calibrated); "
             "**per-step r**: over single steps, held down by A being a small integer.", "",
             "| method · drafter (· sampling · tree temperature) | binned r | slope | per-step r | steps |",
             "|---|---|---|---|---|"]
    lines += [f"| {md_text(m)} | **{num(st['binned_r'])}** | {num(st['slope'])} | {num(st['per_step_r'])} | "
              f"{st['steps']} |" for m, st in stats.items()]
    return fig, "\n".join(lines)
