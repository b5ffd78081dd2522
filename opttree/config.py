"""Settings: each one declared once, here, with its range, help text and UI label.

`DecodeConfig` holds how a run decodes; `ModelConfig` which models it loads (its fields generate the
model flags of `generate`, `bench`, `sweep` and `eval`).

`DecodeConfig` is validated on construction, so every entry point (CLI, app, HTTP API, benchmarks)
gets the same checks; the UI's slider ranges are never trusted. Everything else is derived from the
field declarations below: the CLI flags (`add_decode_args` / `from_args`), the app's controls
(`ui/controls.py`), the `/generate` API's parameters, the lesson presets' keys and the service's
list of accepted settings (`SETTING_NAMES`).
"""

from __future__ import annotations

import argparse
import math
from dataclasses import asdict, dataclass, field, fields

from opttree.errors import BadInput

BUNDLED_ID = "smollm2-135m-instruct"   # the bundled offline target (models/bundled.py finds its GGUF)
TREE_METHODS = ("opt-tree", "chain", "binary", "eagle-static", "eagle-dynamic", "tr-static", "sequoia")
METHODS = TREE_METHODS + ("ar",)
TRAINING_FREE = ("recycling", "lookup")   # drafters without a draft model: Token Recycling, prompt lookup
# Drafters with a trained draft: EAGLE-style feature head, independent classic LM, early exit (EESD)
MODEL_DRAFTERS = ("eagle", "classic", "early-exit")   # each kind's flag, draft and loader: drafters/registry.py
# Each model drafter's draft for the bundled target: a file in opttree/assets/drafts/ (drafters/registry.py)
BUNDLED_DRAFTS = {"eagle": "smollm2-eagle-head.safetensors", "classic": "smollm2-classic.safetensors",
                  "early-exit": "smollm2-early-exit.safetensors"}
SELF_DRAFT = "self"      # the app's pair whose target drafts for itself (a classic drafter): its run's draft name
RANDOM_HEAD = "random"   # an untrained head, a draft spec the head loaders take: what a useless draft looks like
METHOD_LABELS = {"opt-tree": "OPT-Tree (adaptive)", "chain": "Chain (one guess per depth)",
                 "binary": "Binary tree", "eagle-static": "EAGLE-25 static tree",
                 "eagle-dynamic": "EAGLE-2 dynamic tree", "tr-static": "Token Recycling static tree (80)",
                 "sequoia": "Sequoia tree (static, optimal for the draft's acceptance by rank)",
                 "ar": "Autoregressive (no draft)"}
LENGTH_CONTROLS = ("delta", "thompson", "predictor")     # opttree/trees/length_control.py
LENGTH_CONTROL_LABELS = {"delta": "δ rule (OPT-Tree)", "thompson": "Thompson sampling (EESD)",
                         "predictor": "learned predictor (AdaEAGLE)"}
RETRIEVAL_CHOICES = ("off", "on", "auto")
# retrieval = "auto" fuses retrieval into the draft tree wherever a draft model drafts (it prunes what
# retrieval finds), on prompts long and short. Measured 2026-11-25/27 with the bundled pair at T = 0, the head at the
# auto budget: on pasted passages of 458-716 tokens fusion lifts τ 1.61 -> 2.27 (1.12x -> 1.37x AR,
# benchmarks/long_input.md); on the eval set's 48 chat prompts of 37-86 tokens τ 2.35 -> 2.45, speed
# +7.0 % ± 2.4 % paired per prompt (benchmarks/fusion_rule.md).
TREE_TEMPERATURE_RANGE = (0.05, 5.0)   # a real tree temperature; 0 stands for "the draft's fitted value"

# nodes = 0 is the auto budget: each step's size is chosen from this machine's measured costs
# (opttree/engine/cost.py, opttree/trees/auto_size.py), up to the paper's n = 60. On a GPU a
# forward over 60 tree tokens costs about what one token costs, so it grows big trees; on a CPU a
# forward is flat only up to ~8 tokens, so it verifies a handful of nodes.
AUTO_NODES = 0
AUTO_MAX_NODES = 60


def check_tree_temperature(value, shown: str = "tree temperature") -> float:
    """A tree temperature given by a user (a real one, not the 0 that means "the card's"), or BadInput;
    `shown` is what the message calls it."""
    return float(checked_number(shown, value, *TREE_TEMPERATURE_RANGE))


def setting(default, *, label: str, help: str, lo=None, hi=None, choices=None, ui: dict | None = None,
            flags: tuple[str, ...] = (), app_default=None):
    """A decode setting's single declaration.

    lo/hi: the accepted range (inclusive); choices: the accepted values; ui: the app control's own
    range ({"min", "max", "step"}, or {"kind": "number"}); flags: extra CLI spellings;
    app_default: the app's starting value where it differs from the library's default.
    """
    meta = dict(label=label, help=help, lo=lo, hi=hi, choices=choices, ui=ui or {}, flags=flags,
                app_default=default if app_default is None else app_default)
    return field(default=default, metadata=meta)


@dataclass
class DecodeConfig:
    method: str = setting("opt-tree", choices=METHODS, label="Tree method",
                          help="how the draft tree is shaped (ar = plain autoregressive decoding, no tree)")
    nodes: int = setting(AUTO_NODES, lo=0, hi=500, label="Nodes (fixed budget n)",
                         ui=dict(min=1, max=500, step=1, fixed=60, auto_label="auto (this machine)"),
                         help=f"node budget n: the most draft tokens verified per step; 0 = auto: each step's "
                              f"depth and size are chosen from this machine's measured forward costs for the "
                              f"largest expected tokens per second (at most {AUTO_MAX_NODES} nodes)")
    max_depth: int = setting(10, lo=1, hi=20, label="Max depth", ui=dict(min=1, max=20, step=1),
                             flags=("--max_depth",), help="the deepest a tree may grow (draft layers per step)")
    threshold: float = setting(0.5, lo=0.0, hi=1e6, label="Threshold δ", ui=dict(min=0, max=1, step=0.01),
                               app_default=0.3,
                               help="δ: OPT-Tree deepens while a layer raises E(A) by more than this")
    temperature: float = setting(0.0, lo=0.0, hi=2.0, label="Temperature (0 = greedy)",
                                 ui=dict(min=0, max=2, step=0.05),
                                 help="target sampling temperature; 0 = greedy (output equals the target's "
                                      "argmax decoding); any T > 0 samples, a tiny T (down to the smallest "
                                      "positive float) sampling (almost) only the most likely token")
    max_new_tokens: int = setting(128, lo=1, hi=2048, label="Max new tokens", ui=dict(min=1, max=256, step=1),
                                  app_default=32, help="stop after this many generated tokens")
    seed: int = setting(0, lo=0, hi=2**53, label="Seed (temperature > 0: same seed, same text; change it to redraw)",
                        ui=dict(kind="number"),  # 2**53: seeds a browser can send exactly (JavaScript numbers)
                        help="seed of the run's own random generator (sampling only)")
    tree_temperature: float = setting(
        0.0, lo=0.0, hi=TREE_TEMPERATURE_RANGE[1],
        label="Tree temperature (0 = the draft's fitted value at T = 0; 1 under auto or sampling)",
        ui=dict(min=0, max=2, step=0.05),
        help="divides draft logits before the tree is built: below 1 sharpens q, so trees grow deeper and "
             "narrower; the output never changes. 0 = the draft card's fitted value at T = 0 and a fixed "
             "node budget, 1 under the auto budget and when sampling (drafters/tree_temperature.py); the "
             "trace's meta records the value used")
    top_p: float = setting(1.0, lo=0.0, hi=1.0, label="Top-p (nucleus)", ui=dict(min=0, max=1, step=0.01),
                           help="sample only from the smallest set of tokens whose mass reaches top-p (the most "
                                "likely token is always kept, so 0 = only that token); 1 = off")
    top_k: int = setting(0, lo=0, hi=100000, label="Top-k", ui=dict(min=0, max=200, step=1),
                         help="sample only from the k most likely tokens; 0 = off")
    eagle_top_k: int = setting(10, lo=1, hi=64, label="EAGLE-2 top-k", ui=dict(min=1, max=64, step=1),
                               help="EAGLE-2 dynamic trees: children each frontier node proposes per layer")
    retrieval: str = setting("off", choices=RETRIEVAL_CHOICES, app_default="auto", label="Retrieval fusion (RASD)",
                             help="on: continuations retrieved from the prompt and the output so far (and a "
                                  "--retrieval-corpus file on the command line) are pruned by the draft model's "
                                  "probabilities and merged into its tree; the node budget covers the fused tree. "
                                  "auto: on wherever a draft model drafts, off for AR and the drafters without one. "
                                  "on needs a draft model (classic, eagle or early exit); AR ignores it")
    recycling_scope: str = setting("run", choices=("run", "session"), label="Token Recycling table kept for",
                                   help="Token Recycling's table of next-token candidates: run = starts empty "
                                        "every run; session = kept between the runs of one browser session (never "
                                        "shared with another visitor; a run without a session starts empty)")
    length_control: str = setting("delta", choices=LENGTH_CONTROLS, label="Length control",
                                  ui=dict(labels=LENGTH_CONTROL_LABELS),
                                  help="how deep each step drafts: delta = OPT-Tree's δ rule on E(A); thompson = "
                                       "EESD's Thompson sampling: a Beta posterior over per-depth acceptance, "
                                       "learnt during the run, picks the deepest layer still worth δ; predictor = "
                                       "AdaEAGLE's learned predictor: a small network reading the target's last "
                                       "hidden state predicts the accepted length, and the step drafts one layer "
                                       "past it (no threshold)")

    def __post_init__(self):
        for f in fields(self):
            setattr(self, f.name, _checked(f, getattr(self, f.name)))
        lo, hi = TREE_TEMPERATURE_RANGE
        if 0 < self.tree_temperature < lo:
            raise BadInput(f"tree_temperature must be 0 (the draft's fitted value) or between {lo:g} and {hi:g}, "
                           f"got {shown_number(self.tree_temperature)}.")

    @property
    def auto_nodes(self) -> bool:
        """True for the auto budget (nodes = 0)."""
        return self.nodes == AUTO_NODES

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0

    def to_dict(self) -> dict:
        return asdict(self)


def _cut(text: str) -> str:
    return text if len(text) <= 40 else text[:37] + "..."


def short_value(value) -> str:
    """A rejected value as the error message shows it (never thousands of digits)."""
    return _cut(repr(value))


def shown_number(value) -> str:
    """A rejected number as the error message shows it: a number's text (what the command line and the page's
    boxes give) as written, unquoted, and a whole float without its ".0" (`9` for "9" and 9.0, as for 9)."""
    if isinstance(value, str):
        return _cut(value.strip())
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e16:
        return str(int(value))
    return short_value(value)


def shown_bound(x) -> str:
    """A range's end as a message prints it: 0.05, 2,048, 9,007,199,254,740,992 (never 9.0072e+15)."""
    return f"{int(x):,}" if float(x).is_integer() else f"{x:g}"


def checked_number(name: str, value, lo, hi, whole: bool = False) -> int | float:
    """`value` (a number, or a number's text) in lo..hi, or BadInput naming `name` (a setting's name, or a
    control's label): the one check of a numeric setting, for the config and for the page's raw values. An
    int is compared exactly and kept (a huge one must not round into the range); with `whole`, a fraction is
    refused, never rounded, and a whole float or text comes back an int."""
    if isinstance(value, bool):
        raise BadInput(f"{name} must be a number, got {value!r}.")
    between = f"{name} must be between {shown_bound(lo)} and {shown_bound(hi)}, got {shown_number(value)}."
    if isinstance(value, int):
        if not lo <= value <= hi:
            raise BadInput(between)
        return value
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):   # no number: shown as what it is ('warm', None)
        raise BadInput(f"{name} must be a number, got {short_value(value)}.") from None
    if not math.isfinite(number) or number < lo or number > hi:
        raise BadInput(between)
    if whole and number != int(number):
        raise BadInput(f"{name} must be a whole number, got {shown_number(value)}.")
    return int(number) if whole else number + 0.0   # + 0.0: -0.0 is recorded as 0.0


def _checked(f, value, shown: str | None = None):
    """One field's value, converted to its type and checked against its declaration; a message calls it
    `shown` (a flag, on the command line) or its field name."""
    meta, shown = f.metadata, shown or f.name
    if meta["choices"] is not None:
        if value not in meta["choices"]:
            raise BadInput(f"unknown {shown} {short_value(value)}: choose one of {', '.join(meta['choices'])}.")
        return value
    want_int = f.type in ("int", int)
    number = checked_number(shown, value, meta["lo"], meta["hi"], whole=want_int)
    return number if want_int else float(number)


SETTINGS = {f.name: f for f in fields(DecodeConfig)}
SETTING_NAMES = tuple(SETTINGS)
LIMITS = {name: (f.metadata["lo"], f.metadata["hi"]) for name, f in SETTINGS.items() if f.metadata["lo"] is not None}


def app_defaults() -> dict:
    """Every setting's starting value in the app."""
    return {name: f.metadata["app_default"] for name, f in SETTINGS.items()}


def python_type(name: str) -> type:
    """The Python type of a setting (for API signatures and argparse)."""
    t = SETTINGS[name].type
    return {"int": int, "float": float, "str": str}.get(t, t)


# ---- the command line ------------------------------------------------------------------------------

def flag(name: str) -> str:
    """A setting's command-line flag: `--max-new-tokens` for max_new_tokens."""
    return "--" + name.replace("_", "-")


def node_budget(text: str) -> int:
    """`--nodes`: a number, or `auto` (= 0, the auto budget)."""
    if text.strip().lower() == "auto":
        return AUTO_NODES
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: {text!r} (a number or 'auto')") from None


def add_decode_args(p: argparse.ArgumentParser, method: bool = True) -> None:
    """One flag per setting (`--max-new-tokens` for max_new_tokens), help and default from its declaration."""
    for name, f in SETTINGS.items():
        if name == "method" and not method:
            continue
        meta = f.metadata
        kwargs = dict(dest=name, help=meta["help"])
        if meta["choices"] is not None:
            kwargs.update(choices=meta["choices"], default=f.default)
        elif name == "nodes":
            kwargs.update(type=node_budget, default=AUTO_NODES,
                          help=meta["help"].replace("0 = auto", "auto (the default, or 0)"))
        elif name == "tree_temperature":
            kwargs.update(default=None,   # checked by from_args, with the setting's own message
                          help=meta["help"].replace("0 = the draft card's", "default: the draft card's"))
        else:
            kwargs.update(type=python_type(name), default=f.default)
        p.add_argument(flag(name), *meta["flags"], **kwargs)


def from_args(args, method: str | None = None) -> DecodeConfig:
    """The DecodeConfig of parsed CLI arguments; a bad value's message names its flag, as it was typed."""
    values = {name: getattr(args, name) for name in SETTING_NAMES if hasattr(args, name)}
    if method is not None:
        values["method"] = method
    # On the command line a given tree temperature must be a real one (0 is not "the card's").
    tree_t = values.pop("tree_temperature", None)
    values = {name: _checked(SETTINGS[name], value, flag(name)) for name, value in values.items()}
    values["tree_temperature"] = 0.0 if tree_t is None else check_tree_temperature(tree_t, flag("tree_temperature"))
    return DecodeConfig(**values)


# ---- the models a run loads ------------------------------------------------------------------------

def model_setting(default, *, help: str, flags: tuple[str, ...] = (), choices=None, kind: type = str,
                  drafter: str | None = None):
    """A model setting's single declaration: flags (the first is the main one; default `--name`),
    kind (the argparse type, bool for a switch), drafter (the kind whose draft this flag names)."""
    return field(default=default, metadata=dict(help=help, flags=flags, choices=choices, kind=kind, drafter=drafter))


@dataclass
class ModelConfig:
    target: str = model_setting(BUNDLED_ID, flags=("--base-model-path", "--target"),
                                help=f"target model: the bundled {BUNDLED_ID!r}, a hub id or a local path")
    drafter: str | None = model_setting(
        None, choices=(*MODEL_DRAFTERS, *TRAINING_FREE),
        help="eagle = feature head on the target's hidden states; classic = independent draft LM; early-exit = "
             "the target's own first layers plus a trained exit head (EESD); recycling = Token Recycling (a table "
             "of the target's own past candidates, no draft model); lookup = prompt lookup (what followed the last "
             "tokens earlier in the text). Default: the kind whose draft flag is given, else eagle")
    draft_model_path: str | None = model_setting(None, drafter="classic",
                                                 help="classic draft: hub id, local path or .safetensors")
    ea_model_path: str | None = model_setting(None, drafter="eagle",
                                              help="eagle feature head: .safetensors file, folder or EAGLE checkpoint")
    exit_head_path: str | None = model_setting(None, drafter="early-exit",
                                               help="early-exit head: .safetensors file "
                                                    "(python -m opttree.train --kind early-exit)")
    exit_layer: int | None = model_setting(
        None, kind=int, help="early-exit: draft with the target's first N layers (default: the layer the head was "
                             "trained after; another N needs a head trained for it)")
    device: str = model_setting("auto", help="auto (CUDA when present), cpu, cuda, cuda:N")
    dtype: str = model_setting("auto", help="auto (fp32 on CPU and for the bundled target; bf16/fp16 on GPU), "
                               "fp32, fp16, bf16")
    device_map: str | None = model_setting(None, help="e.g. 'auto' to spread a big target over GPUs")
    trust_remote_code: bool = model_setting(False, kind=bool, help="allow model repos' own code (off by default)")
    retrieval_corpus: str | None = model_setting(
        None, help="a UTF-8 text file that retrieval (--retrieval on, and the lookup drafter) searches besides "
                   "the prompt and the output")

    def drafts(self) -> dict[str, str | None]:
        """{drafter kind: the draft its flag names, or None}."""
        return {f.metadata["drafter"]: getattr(self, f.name) for f in fields(self) if f.metadata["drafter"]}

    def kind(self) -> str:
        """The drafter: the one asked for, else the kind whose draft is given, else eagle."""
        return self.drafter or next((k for k, path in self.drafts().items() if path), "eagle")


MODEL_SETTINGS = {f.name: f for f in fields(ModelConfig)}
# The command-line flag that names each model drafter's draft (drafters/registry.py, error messages).
DRAFT_FLAGS = {f.metadata["drafter"]: flag(f.name)
               for f in MODEL_SETTINGS.values() if f.metadata["drafter"]}


def add_model_args(p: argparse.ArgumentParser) -> None:
    """One flag per model setting, help and default from its declaration."""
    for name, f in MODEL_SETTINGS.items():
        meta = f.metadata
        flags = meta["flags"] or (flag(name),)
        kwargs = dict(dest=name, default=f.default, help=meta["help"])
        if meta["kind"] is bool:
            kwargs["action"] = "store_true"
        elif meta["choices"] is not None:
            kwargs["choices"] = meta["choices"]
        else:
            kwargs["type"] = meta["kind"]
        if name in ("target",):
            kwargs["metavar"] = "MODEL"
        p.add_argument(*flags, **kwargs)


def models_from_args(args) -> ModelConfig:
    """The ModelConfig of parsed CLI arguments."""
    return ModelConfig(**{name: getattr(args, name) for name in MODEL_SETTINGS if hasattr(args, name)})
