"""Generated text as HTML: each committed token coloured by origin and shaded by step.

Blue tokens were drafted and accepted; orange ones, underlined too (colour is not all a reader may
see), are the target's bonus token that ends each step. Alternate steps get a darker shade so step
boundaries are visible. A visually hidden sentence says the selected step in words for screen readers. Every token is
HTML-escaped (a model that emits `<script>` shows it as text). Each span carries `data-step` so a
click can jump the scrubber to the step that produced it; each is a button a keyboard reaches too (the page's
script, and the HTML export's, makes the strip one Tab stop whose arrow keys move among the tokens, and Enter
presses one).

A character a byte-level tokenizer splits over several tokens (an emoji, Arabic, an accented letter)
reads U+FFFD in each token decoded alone. The engine records what each committed token adds to the
output (`pieces`: such a character whole on the token that completes it) and the bytes of a character
the text so far ends inside (`pending`, shown as its bytes label, "⟨F0 9F⟩"), so a live run shows each
character as soon as its last byte is committed (opttree/trace.py, "Token texts"). Where a token still
reads U+FFFD (traces of older engines, without them; tokens whose bytes the vocabulary does not give)
`run_pieces` gives such a run of tokens its text from the run's whole output text, on its first token
(the rest empty).
"""

from __future__ import annotations

import html

from opttree.trace import BROKEN, bonus_shown, committed_bonus, committed_draft, counted, node_text

from . import style


def _span(text: str, step: int, bonus: bool, current: bool) -> str:
    """One token: a button (its text its name, its title what it is and what pressing it does) that the page's
    script (assets/keys.js, in the app and the HTML export) makes part of the strip's single Tab stop; the
    selected step's are `aria-current`."""
    shade = (style.BONUS_TEXT_BG if bonus else style.DRAFT_TEXT_BG)[step % 2]
    cls = ("tok bonus" if bonus else "tok draft") + (" current" if current else "")
    mark = ' aria-current="true"' if current else ""
    who = "bonus token from the target" if bonus else "accepted draft token"
    body = html.escape(text).replace("\n", "↵<br>")
    return (f'<span class="{cls}"{mark} data-step="{step}" role="button" tabindex="-1" '
            f'title="step {step + 1}: {who}; click or press Enter to show step {step + 1}" '
            f'style="background:{shade}">{body}</span>')


def token_pieces(step: dict) -> list[tuple[str, bool]]:
    """(text, is_bonus) for each token this step committed, in order: the text it adds to the output
    (`pieces`) where the trace records it, else the token's own text.

    Accepted draft tokens come first; the bonus token follows unless the step stopped early (EOS
    or the token limit), in which case fewer tokens were committed than accepted + 1.
    """
    texts = [step["texts"][a] for a in step.get("accepted", [])]
    committed = step.get("committed")
    count = len(committed) if isinstance(committed, list) else len(texts) + 1
    pieces = step.get("pieces")
    if isinstance(pieces, list) and len(pieces) == count:
        return [(str(t), j >= len(texts)) for j, t in enumerate(pieces)]
    pieces = [(t, False) for t in texts[:count]]
    if count > len(texts):
        pieces.append((step.get("bonus_text", ""), True))
    return pieces


def run_pieces(trace: dict | None) -> list[list[tuple[str, bool]]]:
    """`token_pieces` of every step, the last one's `pending` bytes label after its last token. Each
    character that still reads U+FFFD (a trace without `pieces`, or tokens whose bytes the engine could not
    read from the vocabulary) is mended from the output text; the pieces stay where the output text does
    not line up with them."""
    trace = trace or {}
    steps = trace.get("steps", [])
    pieces = [token_pieces(s) for s in steps]
    where = [(i, j) for i, ps in enumerate(pieces) for j in range(len(ps))]
    texts = [pieces[i][j][0] for i, j in where]
    mended = mend(texts, str(trace.get("output_text") or "")) if any(BROKEN in t for t in texts) else None
    for (i, j), text in zip(where, mended or []):
        pieces[i][j] = (text, pieces[i][j][1])
    pending = steps[-1].get("pending") if steps else None
    if pending and pieces[-1]:
        text, bonus = pieces[-1][-1]
        pieces[-1][-1] = (text + str(pending), bonus)
    return pieces


def _special(text: str) -> bool:
    """A special token's text (`<|im_end|>`), which the output text leaves out."""
    return text.startswith("<") and text.endswith(">")


def mend(texts: list[str], output: str) -> list[str] | None:
    """`texts` with each run of tokens that read U+FFFD given the run's text in `output` (the tokens'
    decoded whole) on its first token, the rest empty; None where `output` does not line up with them
    (then the tokens keep their own texts: a character shows as U+FFFD, but none is lost)."""
    out, at, k = list(texts), 0, 0
    while k < len(texts):
        text = texts[k]
        if BROKEN not in text:
            skip = at + len(output[at:]) - len(output[at:].lstrip())   # a leading space decoded alone drops
            if output.startswith(text, at) or output.startswith(text, skip):
                at = (at if output.startswith(text, at) else skip) + len(text)
            elif not _special(text):
                return None
            k += 1
            continue
        end = k
        while end < len(texts) and BROKEN in texts[end]:
            end += 1
        # A U+FFFD stands for at most 3 bytes, and bytes decode to at most as many characters.
        bound = sum(3 * t.count(BROKEN) + len(t.replace(BROKEN, "")) for t in texts[k:end])
        after = next((t for t in texts[end:] if t and not _special(t)), None)
        stop = len(output) if after is None else next(
            (j for j in range(at + 1, min(len(output), at + bound) + 1) if output.startswith(after, j)), None)
        # The output's last run may itself end mid-character (cut at the token limit): it keeps its U+FFFD.
        if stop is None or not 0 < stop - at <= bound or (after is not None and BROKEN in output[at:stop]):
            return None
        out[k:end] = [output[at:stop]] + [""] * (end - k - 1)
        at, k = stop, end
    return out if not output[at:].strip() else None       # every character placed, none dropped


def _spoken(text: str) -> str:
    """A token quoted for a sentence: its text without the spaces around it, or its visible symbols where
    it is only whitespace (a newline reads as ↵)."""
    return "“" + html.escape(text.strip() or style.visible(text)) + "”"


def step_summary(trace: dict, index: int) -> str:
    """Step `index` (0-based) in one sentence, what the tree and the text strip show: the tree's size and
    depth, the accepted draft tokens, the bonus token and the draft's first rejected guess."""
    steps = trace["steps"]
    s = steps[index]
    kept = committed_draft(s)
    accepted = [_spoken(node_text(s, a)) for a in (s.get("accepted") or [])[:kept]]
    text = (f"Step {index + 1} of {len(steps)}: the draft tree has {counted(len(s['tokens']), 'node')}, "
            f"{counted(max(s['depth'], default=0), 'layer')} deep; the target accepted "
            f"{counted(kept, 'draft token')}" + (f" ({', '.join(accepted)})" if accepted else ""))
    if committed_bonus(s):
        text += f" and added the bonus token {_spoken(bonus_shown(s))}"
    rej = s.get("rejected")
    if isinstance(rej, int) and 0 <= rej < len(s["tokens"]):
        text += f"; the draft's first rejected guess was {_spoken(node_text(s, rej))}"
    return text + "."


# The strip's name for screen readers: it is one Tab stop, and its keys (assets/keys.js) move among the tokens.
STRIP_NAME = "Generated text: ← and → move between tokens, Enter shows a token's step"


def text_html(trace: dict | None, current: int | None = None) -> str:
    """The run's text, each token shaded by origin and step (bonus tokens also underlined), the `current`
    step's outlined; before it, for screen readers, a visually hidden `step_summary` of that step (the page's
    script, assets/keys.js, in the app and the HTML export, says each new one from a live region)."""
    steps = (trace or {}).get("steps", [])
    if not steps:
        return '<div class="gen-text empty">The generated text appears here, token by token.</div>'
    parts = []
    for i, pieces in enumerate(run_pieces(trace)):
        for text, bonus in pieces:
            parts.append(_span(text, i, bonus, i == current))
    legend = (f'<div class="gen-legend"><span class="tok draft" style="background:{style.DRAFT_TEXT_BG[0]}">'
              'accepted draft token</span> '
              f'<span class="tok bonus" style="background:{style.BONUS_TEXT_BG[0]}">bonus token (target)</span> '
              '<span class="hint">shading alternates by step · click a token to see its step</span></div>')
    said = (f'<p class="sr-only">{step_summary(trace, current)}</p>'
            if current is not None and 0 <= current < len(steps) else "")
    return said + legend + f'<div class="gen-text" role="group" aria-label="{STRIP_NAME}">' + "".join(parts) + "</div>"
