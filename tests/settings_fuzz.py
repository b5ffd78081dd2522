"""Values for every decode setting: its boundaries, just outside them, extreme floats and junk.

Derived from the declarations in opttree/config.py, so a new setting is fuzzed without edits here.
"""

from __future__ import annotations

import math

from hypothesis import strategies as st

from opttree.config import SETTING_NAMES, SETTINGS, TREE_TEMPERATURE_RANGE, python_type

# Values no setting accepts (junk types, non-finite and enormous numbers).
JUNK = [None, True, False, "", "abc", "1e999", "nan", [], {}, [1], float("nan"), float("inf"), float("-inf"),
        1e308, -1e308, 10**400, -(10**400)]
TINY = 5e-324   # the smallest positive float


def boundary_values(name: str) -> list:
    """Each setting's accepted edges (lo, hi, the smallest positive step above lo) and the values
    just outside them."""
    meta = SETTINGS[name].metadata
    if meta["choices"] is not None:
        return [*meta["choices"], "", meta["choices"][0].upper(), 0]
    lo, hi = meta["lo"], meta["hi"]
    if python_type(name) is int:
        return [lo, lo + 1, hi, lo - 1, hi + 1, lo + 0.5, float(hi), "1"]
    out = [lo, hi, math.nextafter(lo, -math.inf), math.nextafter(hi, math.inf), -0.0, TINY, 1e-38, "0.5"]
    if name == "tree_temperature":   # 0 (the card's value) or a real temperature: a gap in between
        out += [TREE_TEMPERATURE_RANGE[0], math.nextafter(TREE_TEMPERATURE_RANGE[0], 0.0)]
    return out


def accepted(name: str, value) -> bool:
    """What the declaration says about `value` (a number in [lo, hi], whole for ints, compared
    exactly when it is an int; a listed choice; tree_temperature also excludes the gap between 0 and
    its lowest real value). Written from the declaration, independently of config._checked."""
    meta = SETTINGS[name].metadata
    if meta["choices"] is not None:
        return isinstance(value, str) and value in meta["choices"]
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return meta["lo"] <= value <= meta["hi"]
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return False
    if not (math.isfinite(number) and meta["lo"] <= number <= meta["hi"]):
        return False
    if python_type(name) is int and number != int(number):
        return False
    return not (name == "tree_temperature" and 0 < number < TREE_TEMPERATURE_RANGE[0])


def good_values(name: str, everyday: list | None = None) -> list:
    return [v for v in boundary_values(name) if accepted(name, v)] + list(everyday or [])


def bad_values(name: str) -> list:
    return [v for v in boundary_values(name) + JUNK if not accepted(name, v)]


def _json_safe(value) -> bool:
    """JSON has no NaN or infinity: an HTTP client cannot send them as numbers."""
    return not (isinstance(value, float) and not math.isfinite(value))


@st.composite
def all_settings(draw, everyday: dict | None = None, only: dict | None = None,
                 required: tuple[str, ...] = ("max_new_tokens",), json_only: bool = False):
    """A dict of settings: accepted values (each setting's edges plus `everyday` ones, or just the
    `only` ones for a setting listed there) for some of them, the `required` ones always (so a
    run's length stays under control: max_new_tokens' accepted edges are 1, 2 and 2048, which a
    tiny model's context refuses), then half the time one or two settings replaced by values
    outside their range or junk. `json_only`: no NaN or infinities (for HTTP clients)."""
    everyday, only = everyday or {}, only or {}
    values = {}
    for name in SETTING_NAMES:
        if name in required or draw(st.booleans()):
            good = only[name] if name in only else good_values(name, everyday.get(name))
            values[name] = draw(st.sampled_from(good))
    for _ in range(draw(st.sampled_from([0, 0, 1, 2]))):
        name = draw(st.sampled_from(SETTING_NAMES))
        values[name] = draw(st.sampled_from([v for v in bad_values(name) if not json_only or _json_safe(v)]))
    return values
