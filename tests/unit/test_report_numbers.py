"""The numbers the benchmark report and the E(A)-vs-A views print say what their labels say, at the edges too:
no spread to correlate, no measured speed to compare."""

from __future__ import annotations

import pytest

from opttree.calibration import calibrate, pearson, slope


@pytest.mark.parametrize("value", [0.1, 0.3, 1.7, 2.3])
@pytest.mark.parametrize("steps", [7, 13, 30])
def test_constant_e_a_has_no_r_and_no_slope(value, steps):
    """E(A) the same at every step gives nothing to correlate A with: r and slope are None (the report's
    "n/a"), not rounding noise. Failed before: the mean of seven 0.1s is 0.10000000000000002, so the centred
    sum of squares was 1e-33 and the slope read 9.14 over 7 steps, 6.40 over 13, 3.20 over 30."""
    a = [(3 * i) % 4 for i in range(steps)]
    ea = [value] * steps
    cal = calibrate(ea, a)
    assert (cal["binned_r"], cal["slope"], cal["per_step_r"]) == (None, None, None)
    assert pearson(ea, a) is None and slope(ea, a) is None
    assert pearson(a, ea) is None


def test_a_real_spread_is_still_measured():
    """Spreads far below 1 but above the numbers' rounding still give an r and a slope."""
    ea = [1 + 1e-6 * i for i in range(10)]
    a = [i % 3 for i in range(10)]
    assert pearson(ea, a) == pytest.approx(pearson(list(range(10)), a))
    assert slope(ea, ea) == pytest.approx(1.0)
