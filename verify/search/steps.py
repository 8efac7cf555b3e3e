"""Controls and networks as lists of steps (block, duration or step size), and the two
operations every part of the search uses: merging and inverting.

>>> merge([(0, 0.5), (0, 0.25), (1, 0.0), (1, 1.0)], drop_below=0.0)
[(0, 0.75), (1, 1.0)]
>>> inverse([(0, 0.5), (1, -0.25)])
[(1, 0.25), (0, -0.5)]
"""

from __future__ import annotations

Steps = list[tuple[int, float]]


def inverse(steps: list) -> list:
    """The steps of the inverse flow: reversed, durations (and any derivatives carried after
    them) negated."""
    return [(st[0], *(-x for x in st[1:])) for st in reversed(steps)]


def merge(steps: Steps, drop_below: float = 0.0) -> Steps:
    """Merge consecutive steps of the same block (their flows compose exactly) and drop
    steps with |duration| <= drop_below."""
    out: Steps = []
    for b, t in steps:
        if out and out[-1][0] == b:
            out[-1] = (b, out[-1][1] + t)
        else:
            out.append((b, t))
        if out and abs(out[-1][1]) <= drop_below:
            out.pop()
    # a drop can bring two steps of the same block together again
    return out if all(out[i][0] != out[i + 1][0] for i in range(len(out) - 1)) else merge(out, drop_below)
