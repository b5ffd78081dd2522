"""Generated text as HTML: each committed token coloured by origin and shaded by step.

Blue tokens were drafted and accepted; orange ones are the target's bonus token that ends each
step. Alternate steps get a darker shade so step boundaries are visible. Every token is
HTML-escaped (a model that emits `<script>` shows it as text). Each span carries `data-step` so a
click can jump the scrubber to the step that produced it.
"""

from __future__ import annotations

import html

from . import style


def _span(text: str, step: int, bonus: bool, current: bool) -> str:
    shade = (style.BONUS_TEXT_BG if bonus else style.DRAFT_TEXT_BG)[step % 2]
    cls = "tok bonus" if bonus else "tok draft"
    if current:
        cls += " current"
    who = "bonus token from the target" if bonus else "accepted draft token"
    body = html.escape(text).replace("\n", "↵<br>")
    return (f'<span class="{cls}" data-step="{step}" title="step {step + 1}: {who}" '
            f'style="background:{shade}">{body}</span>')


def token_pieces(step: dict) -> list[tuple[str, bool]]:
    """(text, is_bonus) for each token this step committed, in order.

    Accepted draft tokens come first; the bonus token follows unless the step stopped early (EOS
    or the token limit), in which case fewer tokens were committed than accepted + 1.
    """
    texts = [step["texts"][a] for a in step.get("accepted", [])]
    committed = step.get("committed")
    count = len(committed) if isinstance(committed, list) else len(texts) + 1
    pieces = [(t, False) for t in texts[:count]]
    if count > len(texts):
        pieces.append((step.get("bonus_text", ""), True))
    return pieces


def text_html(trace: dict | None, current: int | None = None) -> str:
    steps = (trace or {}).get("steps", [])
    if not steps:
        return '<div class="gen-text empty">The generated text appears here, token by token.</div>'
    parts = []
    for i, step in enumerate(steps):
        for text, bonus in token_pieces(step):
            parts.append(_span(text, i, bonus, i == current))
    legend = (f'<div class="gen-legend"><span class="tok draft" style="background:{style.DRAFT_TEXT_BG[0]}">'
              'accepted draft token</span> '
              f'<span class="tok bonus" style="background:{style.BONUS_TEXT_BG[0]}">bonus token (target)</span> '
              '<span class="hint">shading alternates by step · click a token to see its step</span></div>')
    return legend + '<div class="gen-text">' + "".join(parts) + "</div>"
