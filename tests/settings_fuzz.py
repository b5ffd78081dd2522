"""Values for every decode setting: its boundaries, just outside them, extreme floats and junk.

Derived from the declarations in opttree/config.py, so a new setting is fuzzed without edits here.
"""

from __future__ import annotations

import math

from hypothesis import strategies as st

from opttree.config import SETTINGS, TREE_TEMPERATURE_RANGE, python_type

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


def setting_values(name: str, valid: list | None = None):
    """Hypothesis strategy for one setting: boundaries, junk, and `valid` (everyday values)."""
    return st.one_of(st.sampled_from(boundary_values(name)), st.sampled_from(JUNK),
                     *([st.sampled_from(valid)] if valid else []))


def all_settings(valid: dict | None = None, skip: tuple[str, ...] = ()):
    """A strategy for a dict of some settings (each with `setting_values`); absent ones keep defaults."""
    valid = valid or {}
    return st.fixed_dictionaries({}, optional={name: setting_values(name, valid.get(name))
                                               for name in SETTINGS if name not in skip})
