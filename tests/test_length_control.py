"""The Thompson-sampling length controller (opttree/trees/length_control.py), with synthetic steps."""

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from opttree.trees.length_control import ThompsonLength


@given(theta=st.floats(0.0, 1.0), price=st.floats(0.0, 1.0), max_depth=st.integers(1, 20))
def test_depth_is_the_deepest_layer_still_worth_its_price(theta, price, max_depth):
    got = ThompsonLength(max_depth, price).depth_for(theta)
    worth = [d for d in range(1, max_depth + 1) if theta ** d > price]
    assert got == (max(worth) if worth else 1)


def test_the_posterior_counts_accepted_depths_and_the_first_refusal():
    c = ThompsonLength(max_depth=6, price=0.3)
    c.observe(drafted=4, accepted=2)      # depths 1, 2 accepted, depth 3 refused
    c.observe(drafted=3, accepted=3)      # every drafted depth accepted: no failure seen
    c.observe(drafted=0, accepted=0)      # nothing drafted: nothing learnt
    assert (c.alpha, c.beta) == (1 + 2 + 3, 1 + 1)


def test_a_seed_reproduces_the_decisions():
    def decisions(seed):
        c = ThompsonLength(max_depth=8, price=0.2, seed=seed)
        out = []
        for a in (3, 0, 5, 2, 8, 1):
            d = c.choose()
            out.append(d)
            c.observe(d["depth"], min(a, d["depth"]))
        return out

    assert decisions(7) == decisions(7) and decisions(7) != decisions(8)
    assert all(0 < d["theta"] < 1 and 1 <= d["depth"] <= 8 for d in decisions(7))


@pytest.mark.parametrize("theta", [0.35, 0.7, 0.9])
def test_the_chosen_depth_settles_where_the_true_acceptance_puts_it(theta):
    """Steps whose every depth is accepted with chance θ: the posterior concentrates on θ and the
    depths drawn late in the run are the depth θ itself asks for."""
    world = random.Random(1)
    c = ThompsonLength(max_depth=10, price=0.25, seed=3)
    late = []
    for i in range(600):
        d = c.choose()["depth"]
        accepted = 0
        while accepted < d and world.random() < theta:
            accepted += 1
        c.observe(d, accepted)
        if i >= 500:
            late.append(d)
    assert abs(c.alpha / (c.alpha + c.beta) - theta) < 0.05
    target = c.depth_for(theta)
    assert sum(abs(d - target) <= 1 for d in late) >= 0.9 * len(late)
