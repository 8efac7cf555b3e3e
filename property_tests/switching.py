"""Adversarial witnesses: an attention weight that switches on and off inside one step.

The float64 Taylor flow checks each step's series at the step's midpoint and end only
(:func:`verify.model.flow.defect`).  This generator builds a control whose single step the
series describes at both check points but not between them (issue 50, class 1).

Two tokens in R^2 and one block with K = I, V = omega J (a rotation) and Q = S symmetric, so
that on the circle |x| = r the logit of a token against itself is

    l(theta) = beta x^T S x = a - b cos(2 (theta - theta_m)).

*Causal* (token 1 at the origin, token 2 on the circle): token 2 attends to itself with weight
sigmoid(l) and to the origin otherwise, so it turns at the speed omega sigmoid(l(theta)).
*Centred pair* (full attention, tokens x and -x, kept opposite by the odd symmetry): each
turns at omega tanh(l(theta)).  Either way the token stops near the angle where l = 0.
a and b put l = -low at theta_m and l = +high at theta_m +- delta/2; the token starts at
theta_m - 3 delta/2 and the step turns it by 2 delta (one Taylor step, since
2 delta < 1.4, the float64 rule's step for a unit rotation).  The check points theta_m -
delta/2 and theta_m + delta/2 see weights within e^-high of a pure rotation, so the series
(a rotation by 2 delta) passes them; the true flow stops near theta_m - delta/2 or before.
The targets are the float64 image: the estimate says WITHIN, the truth is off by ~0.5.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from verify.io import witness
from verify.model.blocks import Block
from verify.verdicts import replay

TOLERANCE = 1e-10


def blocks_and_inputs(delta: float = 0.65, low: float = 30.0, high: float = 45.0, theta_m: float = 0.3,
                      radius: float = 1.0, beta: float = 1.0, omega: float = 1.0, centred: bool = False):
    """(blocks, X, steps) of the construction in the module docstring."""
    b = (high + low) / (1 - math.cos(delta))
    a = b - low
    if centred:  # the logit difference of +-x is 2 l: halve S
        a, b = a / 2, b / 2
    c, s = math.cos(2 * theta_m), math.sin(2 * theta_m)
    S = (a * np.eye(2) - b * np.array([[c, s], [s, -c]])) / (beta * radius**2)
    J = np.array([[0.0, -1.0], [1.0, 0.0]])
    causal = not centred
    switching = Block(Q=S, K=np.eye(2), V=omega * J, beta=beta, causal=causal)
    other = Block(Q=np.eye(2), K=np.eye(2), V=-np.eye(2), beta=beta, causal=causal)
    theta0 = theta_m - 1.5 * delta
    x = radius * np.array([math.cos(theta0), math.sin(theta0)])
    X = np.array([[-x if centred else 0 * x, x]])
    return (switching, other), X, [(0, 2 * delta / omega)]


def witness_doc(**kwargs: Any) -> dict[str, Any]:
    """The witness whose targets are the float64 image of the construction (JSON-ready)."""
    blocks, X, steps = blocks_and_inputs(**kwargs)
    first = witness.from_dict(witness.make(blocks, X, X, "continuous", steps, TOLERANCE))
    Y = np.asarray(replay.image(first).end, dtype=float)
    return witness.make(blocks, X, Y, "continuous", steps, TOLERANCE * max(1.0, float(np.abs(Y).max())))
