"""A tidy layout for a draft tree: depth along x, one row per leaf, the likeliest chain straight.

networkx has no tidy tree layout without graphviz, and its BFS layout puts children far from their
parents. This one is linear in the number of nodes:
- leaves take consecutive rows in depth-first order, so no two subtrees overlap;
- siblings are ordered by p̂ with the likeliest in the middle and the others alternating above and
  below it, so each parent sits at (about) the centre of its children;
- a parent takes exactly the row of its likeliest child, so the most likely chain from the root is
  a straight horizontal line (the path a confident draft bets on).
"""

from __future__ import annotations


def centre_out(children: list[int], p_hat: list[float]) -> list[int]:
    """Children ordered top-to-bottom: likeliest in the middle, then alternating outwards."""
    ranked = sorted(children, key=lambda c: (-p_hat[c], c))
    above, below = [], []
    for i, c in enumerate(ranked[1:]):
        (above if i % 2 == 0 else below).append(c)
    return above[::-1] + ranked[:1] + below


def tidy_layout(parents: list[int], p_hat: list[float]) -> tuple[list[float], list[float], float, int]:
    """Rows for the nodes and the root, plus the number of leaf rows.

    Returns (x per node, y per node, y of the root, leaf rows). x is the depth (root at 0). Parents
    must precede their children (the trace guarantees it).
    """
    n = len(parents)
    kids: dict[int, list[int]] = {-1: []}
    for i, p in enumerate(parents):
        kids.setdefault(p, []).append(i)
        kids.setdefault(i, [])
    y = [0.0] * n
    x = [0.0] * n
    for i, p in enumerate(parents):
        x[i] = 1.0 if p == -1 else x[p] + 1.0
    row = 0
    root_y = 0.0
    # Iterative post-order walk (depth-first, children in centre-out order): depth can reach
    # hundreds for chains read from imported traces, so no recursion.
    stack: list[tuple[int, bool]] = [(-1, False)]
    while stack:
        node, done = stack.pop()
        children = centre_out(kids[node], p_hat)
        if not done:
            stack.append((node, True))
            for c in reversed(children):
                stack.append((c, False))
            continue
        if children:
            best = min(children, key=lambda c: (-p_hat[c], c))
            value = y[best]
        else:
            value = float(row)
            row += 1
        if node == -1:
            root_y = value
        else:
            y[node] = value
    return x, y, root_y, max(row, 1)
