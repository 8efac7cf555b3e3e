"""Finite depth: residual networks of attention layers and their exact derivatives.

A layer (b, h) maps X -> X + h F_b(X); a network is a list of layers applied in order, and
its depth is their number.  The derivatives are exact (chain rule on analytic Jacobians):

    d X_L / d h_l = G_l F_{b_l}(X_{l-1}),    G_l = (I + h_L DF_{b_L}) ... (I + h_{l+1} DF_{b_{l+1}}),
    d X_L / d X_0 = G_0,

with the layer Jacobians evaluated at the states X_{l-1} they act on (per sequence, since the
Jacobian is block diagonal).  A continuous control becomes a network by splitting each step
(b, tau) into m equal layers (b, tau / m): the explicit Euler scheme, first order in the
layer step.

>>> import numpy as np
>>> from verify.blocks import gaussian_blocks
>>> blocks = gaussian_blocks(seed=0, d=2)
>>> X = np.random.default_rng(1).normal(size=(2, 3, 2))
>>> layers = control_to_network([(0, 0.5), (1, -0.2)], 4)
>>> len(layers), layers[0]
(8, (0, 0.125))
>>> apply(blocks, layers, X).end.shape
(2, 3, 2)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import validate
from .attention import field, jacobian
from .backend import namespace, namespace_of, precision
from .blocks import Block
from .flow import backward_products


@dataclass(frozen=True)
class NetworkResult:
    """End point, and when asked for ``d_steps`` (N n d, L) and ``d_initial`` (N, n d, n d)."""

    end: Any
    d_steps: Any = None
    d_initial: Any = None


def control_to_network(control: Sequence[tuple[int, Any]], splits: int | Sequence[int]) -> list[tuple[int, Any]]:
    """Split step k of a control into ``splits`` (or ``splits[k]``) equal layers."""
    control = validate.steps(control)
    ms = [splits] * len(control) if isinstance(splits, int) else list(splits)
    if len(ms) != len(control) or any(int(m) < 1 for m in ms):
        raise ValueError("splits must be a positive integer or one positive integer per step")
    return [(b, tau / m) for (b, tau), m in zip(control, ms, strict=True) for _ in range(int(m))]


def rounding_estimate(n_layers: int, end: Any, unit: float = 2.0**-52) -> float:
    """Estimate (not a bound) of the rounding in a network's output: 4 (L + 1) u max(1, max|x|)."""
    return 4 * (n_layers + 1) * unit * max(1.0, float(np.max(np.abs(np.asarray(end, dtype=float)))))


def apply(
    blocks: Sequence[Block],
    layers: Sequence[tuple[int, Any]],
    X: Any,
    *,
    dps: int | None = None,
    sensitivities: bool = False,
) -> NetworkResult:
    """Run the network on X (N, n, d); in mpmath at ``dps`` digits when given."""
    layers = validate.steps(layers, "layers")
    if dps is not None:
        with precision(dps):
            xp = namespace("mpmath")
            return _apply(blocks, [(b, xp.asarray(h)[()]) for b, h in layers], xp.asarray(X), sensitivities)
    return _apply(blocks, [(b, float(h)) for b, h in layers], X, sensitivities)


def _apply(blocks, layers, X, sensitivities) -> NetworkResult:
    xp = namespace_of(X)
    N, n, d = X.shape
    jacobians, fields = [], []
    eye = None
    for b, h in layers:
        F = field(blocks[b], X)
        if sensitivities:
            if eye is None:
                eye = xp.eye(n * d) if X.dtype == object else xp.eye(n * d, dtype=X.dtype)
            fields.append(F)
            jacobians.append(eye + h * jacobian(blocks[b], X))
        X = X + h * F
    if not sensitivities:
        return NetworkResult(X)
    D, G = backward_products(xp, jacobians, fields, n * d, X)
    return NetworkResult(X, D, G)
