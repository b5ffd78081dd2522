"""A run as one standalone HTML file: every step's tree with a scrubber, the text and the metrics.

It opens offline in any browser (plotly.js is inlined), for slides and handouts: no server, no
model. Built from the trace alone, with the same figure and text builders as the app and the app's
script that fits a tree's labels to the width it is drawn at, so a step looks the same in both (on a
phone too). It runs the app's keys too (assets/keys.js, `viz.style.keys_script`), so it is used the same way
from the keyboard and with a screen reader: ← / → step and Space play / pause, the generated text and the
chart's toolbar one Tab stop each (← / → move among their buttons, Enter or Space shows a token's step), the
step buttons named in words, each new step's sentence said by the strip's live region (in #gen-text, around
the text each step redraws). The page names its chart itself (role=figure, aria-label `TREE_NAME`, in its HTML):
the app's script names each chart from its Gradio block's label, which the export has no copy of.
"""

from __future__ import annotations

import html
import json
import re

import plotly.io as pio
from plotly.offline import get_plotlyjs

from . import style
from .metrics import run_summary, step_rows
from .text_view import text_html
from .tree_figure import TREE_NAME, label_script, root_context, step_title, tree_figure


def _markdown_bold(text: str) -> str:
    """run_summary's Markdown as HTML: its **bold**, and the characters it escaped for Markdown in the names it
    prints (`style.md_text`; they are HTML-escaped already) as themselves. An escaped character is read before
    any '**', so a name's escaped star ('x\\*') never closes the bold."""
    out, bold = [], False
    for m in re.finditer(r"\\(.)|\*\*|[^\\*]+|.", text, re.S):
        if m.group(1) is not None:
            out.append(m.group(1))
        elif m.group(0) == "**":
            out.append("</b>" if bold else "<b>")
            bold = not bold
        else:
            out.append(m.group(0))
    return "".join(out)


# The export's own script: each step's tree, metrics and text shown by the scrubber, the step buttons and a
# token's click (the keys are assets/keys.js, embedded beside it); the page calls show(start) after it.
_STEPS_JS = """const D = JSON.parse(document.getElementById('run-data').textContent);
const n = D.figures.length, slider = document.getElementById('step');
let timer = null;
function show(i) {
  if (!n) return;
  i = Math.max(0, Math.min(n - 1, i));
  slider.value = i + 1;
  document.getElementById('label').textContent = 'step ' + (i + 1) + ' of ' + n;
  Plotly.react('tree', D.figures[i].data, D.figures[i].layout, {responsive: true});
  document.getElementById('metrics').innerHTML = D.metrics[i];
  // The text is drawn anew: a token the keyboard focused (Enter pressed on it) hands the focus to its place in
  // the new text; one a click focused lets it go, so the arrows then step, as after a click in the app.
  const text = document.getElementById('text'), toks = () => [...text.querySelectorAll('.gen-text .tok')];
  const at = toks().findIndex((t) => t === document.activeElement && t.matches(':focus-visible'));
  text.innerHTML = D.texts[i];
  if (at >= 0) toks()[at]?.focus();
}
function cur() { return parseInt(slider.value, 10) - 1; }
// Play and Pause take turns, as in the app: Pause shows while steps play (and takes the focus Play had).
function playing(on) {
  const [playButton, pauseButton] = ['play', 'pause'].map((id) => document.getElementById(id));
  const [shown, hidden] = on ? [pauseButton, playButton] : [playButton, pauseButton];
  const had = document.activeElement === hidden;
  shown.hidden = false;
  hidden.hidden = true;
  if (had) shown.focus();
}
function pause() { clearInterval(timer); timer = null; playing(false); }
function play() {
  if (cur() >= n - 1) show(0);
  playing(true);
  timer = setInterval(() => { if (cur() >= n - 1) pause(); else show(cur() + 1); }, 800);
}
slider.addEventListener('input', () => show(cur()));
document.getElementById('prev').onclick = () => show(cur() - 1);
document.getElementById('next').onclick = () => show(cur() + 1);
document.getElementById('play').onclick = play;
document.getElementById('pause').onclick = pause;
document.getElementById('text').addEventListener('click', (e) => {
  const t = e.target.closest('[data-step]'); if (t) show(parseInt(t.dataset.step, 10));
});
"""


def standalone_html(trace: dict, colour: str = "log_p_hat", start: int = 0) -> str:
    """The page; it opens at step `start` (0-based: the step selected when it was exported)."""
    steps, meta = trace.get("steps", []), trace.get("meta", {})
    start = max(0, min(int(start), len(steps) - 1)) if steps else 0
    figures = [tree_figure(s, step_title(trace, i), colour=colour, context=root_context(trace, i))
               for i, s in enumerate(steps)]
    figures = [json.loads(pio.to_json(f, validate=False)) for f in figures]
    texts = [text_html(trace, i) for i in range(len(steps))]
    metrics = ["".join(f"<tr><td>{html.escape(k)}</td><td>{html.escape(v)}</td></tr>" for k, v in step_rows(meta, s))
               for s in steps]      # the app's rows (viz/metrics.step_rows)
    data = json.dumps({"figures": figures, "texts": texts, "metrics": metrics}, ensure_ascii=False)
    # The JSON sits inside a <script> element: with no "<" in it, no text ("</script>", "<!--<script>") can end
    # the element early or make the parser read past its end.
    data = data.replace("<", "\\u003c")
    title = f"OPT-Tree Explorer · {meta.get('method', '')} run"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body {{ font-family: system-ui, sans-serif; margin: 16px; color: #222; }}
.bar {{ display: flex; gap: 8px; align-items: center; margin: 8px 0; flex-wrap: wrap; }}
.bar input[type=range] {{ flex: 1; min-width: 200px; }}
table {{ border-collapse: collapse; font-size: 14px; margin-bottom: 12px; }}
td {{ border: 1px solid #ddd; padding: 3px 8px; }}
.prompt {{ background: #f4f4f4; padding: 8px; border-radius: 4px; white-space: pre-wrap; }}
{style.PAGE_CSS}
</style>
<script>{get_plotlyjs()}</script></head>
<body>
<h2>{html.escape(title)}</h2>
<p>{_markdown_bold(run_summary(trace)).replace(chr(10) * 2, "<br>")}</p>
<div class="prompt"><b>Prompt:</b> {html.escape(trace.get('prompt', ''))}</div>
<div class="bar"><button id="prev">◀ Prev</button><input id="step" type="range" min="1" max="{max(len(steps), 1)}"
 value="{start + 1}" aria-label="Step"><button id="next">Next ▶</button><button id="play">▶ Play</button><button
 id="pause" hidden>❚❚ Pause</button><span id="label"></span></div>
<div id="tree" role="figure" aria-label="{html.escape(TREE_NAME)}"></div>
<table id="metrics"></table>
<div id="gen-text"><div id="text"></div></div>
<p style="color:#666;font-size:12px">Keys: ← / → step, Space play / pause; Tab reaches the generated text,
where ← / → move among its tokens and Enter shows a token's step. Exported from OPT-Tree Explorer; it needs no
server and no network.</p>
<script id="run-data" type="application/json">{data}</script>
<script>({label_script().strip()})();</script>
<script>({style.keys_script().strip()})();</script>
<script>
{_STEPS_JS}show({start});
</script></body></html>
"""
