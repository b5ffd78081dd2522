"""Teaching text and one-click presets for the Learn tab (plain data; the app wires it up).

Each preset is chosen to show one distinct lesson, and carries the settings that make it visible
even with a small CPU model and a short run. Every preset carries the same keys: its name, lesson and
prompt, the model pair (an allow-list id; None = the allow-list's default pair) and the same settings.
"""

from __future__ import annotations

LEARN_TEXT = """
### Speculative decoding in one picture
A big **target** model writes one token per forward pass. A small **draft** guesses several tokens
ahead; the target then checks all the guesses in **one** forward pass and keeps the longest prefix
it agrees with, plus one token of its own (the **bonus token**, orange). The output is exactly what
the target alone would write; only the number of slow target passes changes.

### Why a tree?
The draft is unsure: after “The cat”, maybe *sat*, maybe *is*. A **tree** of guesses hedges:
several branches are checked at once. **Tree attention** lets every node see only its own ancestors,
so the whole tree fits in one forward pass.

### p̂ and E(A)
Each node has the draft's probability **q** of its token given its parent. Multiplying q along the
path from the root gives **p̂**, the chance the whole path is accepted (node colour). The expected
number of accepted tokens is **E(A) = Σ p̂** over the tree's nodes. That is only true when q is
calibrated; a draft's card may carry a fitted **tree temperature** that rescales q before the tree
is built (the run summary names it; the *Tree temperature* slider overrides it at T = 0). It changes
the tree's shape, never the output.

### OPT-Tree and δ
With a budget of **n** nodes, OPT-Tree grows the tree layer by layer, keeping the n nodes with the
largest p̂ (the tree that maximises E(A)). Each extra layer costs a draft pass, so it only goes
deeper while a layer raises E(A) by more than **δ** (the dashed line in *Why this shape*) and the
depth is below the maximum. Confident drafts grow deep chains; unsure ones grow wide, bushy trees.

### How good can multi-draft acceptance be?
With k drafts at a node, a verifier must still emit exactly the target's token distribution p; the
question is how often that token is one of the drafts. For drafts sampled from q (i.i.d. or without
replacement) there is a best possible rate, computed exactly from p and q (Hu et al., ICLR 2025):
recursive rejection sampling and K-SEQ come close but stay below it, and drafting without
replacement never does worse than i.i.d. (its drafts never repeat). This tool's trees use a
**fixed** set of children instead, and the target samples its own token and accepts the child that
matches: that **per-node target-sample rule is optimal for a fixed set**, because no lossless
verifier can accept more often than the target's mass on the set (the accepted token is the
target's token), and this rule accepts exactly that often. The **Theory** tab draws all of it on
the real p and q of any recorded node.
### Auto: the size this machine can afford
The budget n and δ ignore what a forward costs. On a GPU, verifying 60 tree tokens costs about what
one token costs; on a laptop CPU a forward is flat only up to about 8 tokens and then grows, and
each draft layer takes time too. With the node budget at **auto** the app first measures, once,
what a target forward over k tokens and a draft layer over w nodes cost here (the chart in
*Compare*). Each step then weighs every candidate tree OPT-Tree builds — the best n nodes after d
layers — by its expected throughput **(E(A) + 1) / (draft time + verify time)**: the tokens a step
should commit over the time it takes. It drafts another layer only while that raises the best
value, and verifies the best (d, n). *Why this shape* shows the whole table, the chosen point
starred. The paper's rule is the special case of a flat verify cost and a fixed price δ per layer:
auto prices a layer at its measured time times the throughput reached so far.

### How deep? Three answers
OPT-Tree's δ rule reads the draft's own p̂: deepen while a layer adds more than δ to E(A). A
**Thompson sampling** controller (after EESD) learns instead from what the target actually did: it
keeps a Beta posterior over θ, the chance that a drafted token is accepted once its parent was, adds
each step's accepted depths and its first refusal, and before each step draws a θ from the posterior
and drafts the deepest layer L whose expected gain θ^L still beats δ. Early in a run the posterior is
wide, the draws vary and so does the depth (it explores); as evidence accumulates the depth settles
where the acceptance really is. *Why this shape* shows the draw, the posterior and the choice. A
**learned predictor** (after AdaEAGLE) needs no threshold at all: a network of a few thousand weights,
trained on decoding traces, reads the target's last hidden state and predicts how many draft tokens
this step will get accepted; the step drafts one layer past that. It learnt from runs beforehand,
not from this one.

### A draft that is the target itself, cut short
The **early-exit** draft (pair *+ early exit*, after EESD) is no second model: it runs the target's
own first N layers and then a small trained **exit head** (one layer, taught to predict what the
full target would say: self-distillation) and the target's own output layer. Those first N layers
need no keys and values of their own for the text so far: the target computed exactly those when it
verified it, so the draft reads the target's cache and adds only the root and the tree's nodes,
removed again before the target checks the tree. A deep node therefore sees exactly the hidden state the target
would have there — the draft never feeds on its own guesses of the target's features, as a feature
head does — but each draft layer costs N of the target's layers, so N stays small. EESD pairs it
with the **Thompson sampling** controller above to decide each round's length.

**Read the tree:** depth runs left to right from the root (the last committed token). Red diamonds
are the accepted path, the grey X is the draft's first guess the target refused, the orange star is
the target's bonus token. Hover a node for its token, q, p̂, depth, rank and source.

### Drafting without a trained draft
**Token Recycling** (pair *+ Token Recycling*) needs no draft model. Every verification scores the
root and every node, and most rows are thrown away with the rejected branches; Token Recycling keeps
them in a table: for each token, the 8 tokens the target liked most right after it, last time it saw
it. The next tree is read from that table (hexagons) along a fixed ~80-node template
(*Token Recycling static tree*) or by OPT-Tree. Here q is the target's own probability of the
candidate after the same token **in an earlier context**: it ranks candidates, so OPT-Tree can pick
the best n, but p̂ is not a calibrated chance of acceptance. The table starts from the prompt's rows
and learns as it goes; *kept for: session* keeps it across your runs (never shared with anyone else).

**Prompt lookup** (pair *+ prompt lookup*) is retrieval alone: the last 3 (or 2, or 1) tokens are
searched earlier in the prompt and the output, and what followed is proposed (triangles), a chain
or a small tree when matches disagree. q is the share of matches that continue that way. It shines
when the answer copies the prompt (summaries, quotes) and proposes nothing otherwise.

**Retrieval fusion** (RASD; *Retrieval fusion: on* with a draft model) does both: the draft model
grows its tree, retrieval proposes continuations from the text, the draft model's probabilities
prune the retrieved ones it finds very unlikely, and the two trees are merged by longest-prefix
matching, so a shared prefix is one node (*both*, pentagons). The node budget covers the fused tree,
verified in one pass. A retrieved node's q is the larger of the draft's probability and its match
share: a ranking score again, not a calibrated probability.
"""

SUMMARY_PROMPT = (
    "Summarize the following text in two sentences.\n\nThe Great Barrier Reef is the world's largest coral reef "
    "system, composed of over 2,900 individual reefs and 900 islands stretching for over 2,300 kilometres over an "
    "area of approximately 344,400 square kilometres. The reef is located in the Coral Sea, off the coast of "
    "Queensland, Australia. It can be seen from outer space and is the world's biggest single structure made by "
    "living organisms. This reef structure is composed of and built by billions of tiny organisms, known as coral "
    "polyps.")

# The summarising lessons (prompt lookup, retrieval fusion): the same prompt and settings, their own pair.
SUMMARY_RUN = {"prompt": SUMMARY_PROMPT, "method": "opt-tree", "nodes": 20, "max_depth": 10, "threshold": 0.3,
               "max_new_tokens": 32}

PRESETS = [
    {"name": "Confident: deep chain",
     "lesson": "A predictable continuation: p̂ stays high along one path, so OPT-Tree spends its "
               "budget on depth and many tokens are accepted per step.",
     "prompt": "Count from 1 to 30, separated by commas.",
     "method": "opt-tree", "nodes": 30, "max_depth": 12, "threshold": 0.2, "max_new_tokens": 24},
    {"name": "Open-ended: wide tree",
     "lesson": "An open question: the draft is unsure about the next word, p̂ drops fast with depth, "
               "and OPT-Tree spreads the same budget sideways.",
     "prompt": "Write a short poem about autumn.",
     "method": "opt-tree", "nodes": 60, "max_depth": 10, "threshold": 0.3, "max_new_tokens": 24},
    {"name": "High δ: shallow trees",
     "lesson": "With δ = 0.9 a layer must add almost a whole expected token to be worth drafting: "
               "trees stop after a layer or two.",
     "prompt": "Explain photosynthesis in two sentences.",
     "method": "opt-tree", "nodes": 60, "max_depth": 10, "threshold": 0.9, "max_new_tokens": 24},
    {"name": "Low δ: deep trees",
     "lesson": "With δ = 0.02 almost any gain justifies another layer: the tree keeps deepening until a "
               "new layer adds (almost) nothing to the best n nodes — see the flat end of *Why this shape*.",
     "prompt": "Explain photosynthesis in two sentences.",
     "method": "opt-tree", "nodes": 60, "max_depth": 10, "threshold": 0.02, "max_new_tokens": 24},
    {"name": "Auto: this machine's size",
     "lesson": "The node budget at auto: each step picks the depth and size with the most expected tokens "
               "per second for what a forward costs here. On a CPU that is a handful of nodes; Why this "
               "shape shows the objective by depth and size.",
     "prompt": "Write a short poem about autumn.",
     "method": "opt-tree", "nodes": 0, "max_depth": 10, "threshold": 0.3, "max_new_tokens": 24},
    {"name": "Static binary tree",
     "lesson": "The same budget as a fixed binary tree: every step has the same shape whatever the draft "
               "believes. Compare its accepted lengths with OPT-Tree's.",
     "prompt": "Explain photosynthesis in two sentences.",
     "method": "binary", "nodes": 60, "max_depth": 10, "threshold": 0.3, "max_new_tokens": 24},
    {"name": "Sharper draft: tree temperature",
     "lesson": "The open-ended poem again, with the draft's probabilities sharpened (tree temperature "
               "0.3): q of the top guess rises, so p̂ falls more slowly with depth and OPT-Tree trades "
               "width for depth (with the bundled head: about 9 layers and 3 first-layer guesses a step "
               "instead of 5 and 8). The text is the same, but τ drops: the over-confident chains are "
               "refused early. That is why a draft's fitted value is chosen by measured τ.",
     "prompt": "Write a short poem about autumn.",
     "method": "opt-tree", "nodes": 60, "max_depth": 10, "threshold": 0.3,
     "max_new_tokens": 24, "tree_temperature": 0.3},
    {"name": "Token Recycling: no draft",
     "lesson": "The target alone: the tree comes from a table of the target's own earlier candidates "
               "(rejected branches included), filled along Token Recycling's static template. The table "
               "is kept for your session: run it twice and the second run accepts more.",
     "prompt": "List the planets of the solar system in order from the Sun, one per line.",
     "method": "tr-static", "nodes": 40, "max_depth": 10, "threshold": 0.3,
     "max_new_tokens": 32, "model": "smollm2-recycling",
     "recycling_scope": "session"},
    {"name": "Prompt lookup: copy from the prompt",
     "lesson": "No draft model either: the last tokens are looked up in the prompt and what followed "
               "is proposed. Summarising a given text copies long spans, so whole chains are accepted; "
               "where nothing matches, the step is a single target token.",
     **SUMMARY_RUN, "model": "smollm2-lookup"},
    {"name": "Retrieval fusion: summarise",
     "lesson": "The trained head plus retrieval from the text: copied names the head cannot even propose "
               "(its vocabulary is small) arrive as retrieved branches (triangles), shared prefixes as "
               "pentagons. Compare the accepted lengths with retrieval off.",
     **SUMMARY_RUN, "model": "smollm2-eagle", "retrieval": "on"},
    {"name": "Thompson sampling: learnt depth",
     "lesson": "The depth of each step comes from what the target accepted so far, not from the draft's "
               "p̂: a Beta posterior over per-depth acceptance, a draw from it, and the deepest layer still "
               "worth δ. Scrub from the first step to the last: the posterior narrows and the depth settles.",
     "prompt": "Count from 1 to 30, separated by commas.",
     "method": "opt-tree", "nodes": 30, "max_depth": 12, "threshold": 0.2,
     "max_new_tokens": 48, "length_control": "thompson"},
    {"name": "Learned predictor: no threshold",
     "lesson": "The depth of each step predicted from the target's last hidden state by a small trained "
               "network: no δ involved. Why this shape compares the prediction, the layers drafted and what "
               "the step accepted.",
     "prompt": "Explain photosynthesis in two sentences.",
     "method": "opt-tree", "nodes": 30, "max_depth": 10, "threshold": 0.3,
     "max_new_tokens": 32, "length_control": "predictor"},
    {"name": "Early exit: the target's first layers",
     "lesson": "The draft is the target's own first layers plus a trained exit head, drafting a chain whose "
               "length Thompson sampling picks (EESD). Hover the nodes: q is the cut-short target's "
               "probability. The run summary's draft time is what its layers cost per step.",
     "prompt": "List the planets of the solar system in order.",
     "method": "chain", "nodes": 10, "max_depth": 8, "threshold": 0.3,
     "max_new_tokens": 48, "length_control": "thompson", "model": "smollm2-early-exit"},
]


# What a preset does not name is set to these (ui/explore.apply_preset sets every key): greedy, the
# draft's fitted tree temperature, the Explore model pair, no retrieval, a fresh recycling table per run
# and OPT-Tree's δ rule for the depth.
PRESET_DEFAULTS = {"temperature": 0.0, "tree_temperature": 0.0, "model": None, "retrieval": "off",
                   "recycling_scope": "run", "length_control": "delta"}
PRESETS = [{**PRESET_DEFAULTS, **p} for p in PRESETS]
