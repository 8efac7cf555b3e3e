"""Why a search did not find a control: the facts a "not found" message states.

After a failed search the user needs to know whether more time would help, or whether the
data ask for something else.  :func:`not_found` adds to the search's own account (``why``:
out of time or every start stalled; ``best``: its best residual) what can be computed from
the data alone:

* the slowest sequence's shape speed (:mod:`verify.search.shape_speed`: a slow sequence needs
  a long control to change its shape);
* under full attention, a lower bound on what any control must last (continuous depth) or on
  any network's total |step| (finite depth);
* saturated softmax on the inputs or targets (the smallest attention weight below float64's
  resolution), with the advice to rescale;
* too few steps searched for the dimensions the targets move in;
* the fits that reached the search tolerance and were lost in the finish, by stage.

>>> import numpy as np
>>> from verify.model.blocks import gaussian_blocks
>>> X, Y = np.random.default_rng(1).normal(size=(2, 1, 2, 2))
>>> msg = not_found(gaussian_blocks(0, 2), X, Y, why="not found", segments=1, best=1e-3, finite=True, steps=2,
...                 lost={}, search_tol=1e-11)
>>> "allow at least 4" in msg and "total |step| at least" in msg
True
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import numpy as np

from verify.lie.invariants import predicted_rank
from verify.lie.rank import FLOAT64_DIGITS, weight_digits
from verify.model.blocks import Block
from verify.search.finish import LOSSES
from verify.search.shape_speed import minimal_duration, minimal_step_total, slowest


def not_found(blocks: Sequence[Block], X: np.ndarray, Y: np.ndarray, *, why: str, segments: int, best: float,
              finite: bool, steps: int, lost: dict[str, int], search_tol: float) -> str:
    """The "not found" message: ``why`` from the search and its ``best`` max |residual| (a fit
    of ``segments`` segments), then the facts of the module docstring (``steps``: the length
    of the controls searched; ``lost``: fits lost in the finish, by stage, keys of
    :data:`verify.search.finish.LOSSES`)."""
    speed, where, index = slowest(blocks, X, Y)
    best = (f"best max |residual| of the {segments}-segment fit = {best:.2e}" if math.isfinite(best)
            else f"the {segments}-segment fit recorded no finite residual (the budget ended before its first "
                 "iteration, or every residual overflowed)")
    msg = (f"{why}; {best}; the slowest sequence, {where} "
           f"{index}, has shape speed {speed:.2g} (verify.search.shape_speed: a slow sequence needs a long control to "
           "change its shape)")
    if not any(b.causal for b in blocks):  # the diameter bounds assume full attention
        if finite:
            bound = minimal_step_total(blocks, X, Y)
            msg += f"; every network from the inputs to the targets has total |step| at least {bound:.3g}"
        else:
            msg += f"; every control from the inputs to the targets lasts at least {minimal_duration(blocks, X, Y):.3g}"
    for which, Z in (("inputs", X), ("targets", Y)):
        w = weight_digits(blocks, Z)
        if w > FLOAT64_DIGITS:
            msg += (f"; softmax saturates on the {which} (smallest attention weight 10^-{w:.3g}, below float64's "
                    "resolution): rescale the data towards |x| ~ 1")
    free = predicted_rank(X, bool(blocks[0].causal))  # the dimensions the targets can move in
    free = X.size if free is None else free
    if steps < free:
        msg += (f"; the controls searched have {steps} steps (max_depth, steps_per_dim), but the targets move in "
                f"{free} dimensions and the images of {steps} steps form a set of dimension at most {steps}: "
                f"allow at least {free}")
    if lost:
        msg += (f"; {sum(lost.values())} fit(s) reached {search_tol:.0e} and were lost in the finish: "
                + ", ".join(f"{c} {LOSSES[k]}" for k, c in Counter(lost).most_common()))
    return msg
