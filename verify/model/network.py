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
>>> from verify.model.blocks import gaussian_blocks
>>> blocks = gaussian_blocks(seed=0, d=2)
>>> X = np.random.default_rng(1).normal(size=(2, 3, 2))
>>> layers = control_to_network([(0, 0.5), (1, -0.2)], 4)
>>> len(layers), layers[0]
(8, (0, 0.125))
>>> apply(blocks, layers, X).end.shape
(2, 3, 2)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from verify.io import validate
from verify.model.attention import field, field_and_jacobian, field_jet, field_numpy, jacobian
from verify.model.backend import UNIT, namespace, namespace_of, precision
from verify.model.blocks import Block
from verify.model.flow import backward_products


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


def rounding_estimate(n_layers: int, end: Any, unit: float = UNIT) -> float:
    """Estimate (not a bound) of the rounding in a network's output: 4 (L + 1) u max(1, max|x|)."""
    return 4 * (n_layers + 1) * unit * max(1.0, float(np.max(np.abs(np.asarray(end, dtype=float)))))


def propagated_rounding(blocks: Sequence[Block], layers: Sequence[tuple[int, float]], X: np.ndarray,
                        unit: float = UNIT) -> float:
    """Estimate (not a bound) of the rounding in a float64 network's output: each layer
    (b, h) rounds its output X_l = X_(l-1) + h F_b(X_(l-1)) at the scale s_l = |X_l| + |h F|
    (componentwise), the layers after it carry that to the end by G_l = d X_L / d X_l, and
    independent roundings add in root-sum-square:

        max_i  u sqrt( sum_(l=0..L) sum_j (G_l)_ij^2 (s_l)_j^2 ),    s_0 = |X_0|.

    On networks the solver found it was 3 to 70 times the float64 replays' actual distance to
    a 40-digit replay (ours and the independent implementation's); the worst-case sum of
    ||G_l||_inf was 1000 times too large.  Its use: a network whose replay by other code could
    miss the tolerance (one found at m = 8 had steps up to 57 and ||G_0|| = 7e5; its own replay
    was 1.8e-11, the independent one 1.2e-10) is not returned.  It is inf when the
    amplification overflows float64 (a network found at m = 32 did).

    >>> import numpy as np
    >>> from verify.model.blocks import gaussian_blocks
    >>> X = np.random.default_rng(1).normal(size=(2, 3, 2))
    >>> bool(propagated_rounding(gaussian_blocks(0, 2), [(0, 0.5), (1, -0.2)], X) < 1e-15)
    True
    """
    layers = validate.steps(layers, "layers")
    H = np.array([[h for _, h in layers]], dtype=float)
    with np.errstate(all="ignore"):  # a network or an amplification beyond float64 is reported as inf
        states, fields, jacobians = _forward(blocks, [b for b, _ in layers], H, np.asarray(X, dtype=float)[None], True)
        N, nd = states[0].shape[1], states[0].shape[2] * states[0].shape[3]
        scales = [np.abs(states[0]).reshape(N, nd)] + [
            np.abs(Z).reshape(N, nd) + np.abs(h * F).reshape(N, nd) for Z, h, F in zip(states[1:], H[0], fields, strict=True)]
        c = max(float(np.max(s)) for s in scales) or 1.0  # squares of scales near 1e-300 would underflow
        scales = [s / c for s in scales]
        G, total = np.broadcast_to(np.eye(nd), (N, nd, nd)), scales[-1] ** 2
        for A, s in zip(reversed(jacobians), reversed(scales[:-1]), strict=True):
            G = G @ A[0]
            total = total + np.einsum("qij,qj->qi", G**2, s**2)
        estimate = unit * c * float(np.sqrt(total).max())
    return estimate if math.isfinite(estimate) else math.inf


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
            return apply_in_namespace(blocks, [(b, xp.asarray(h)[()]) for b, h in layers], xp.asarray(X), sensitivities)
    return apply_in_namespace(blocks, [(b, float(h)) for b, h in layers], X, sensitivities)


def apply_in_namespace(blocks, layers, X, sensitivities) -> NetworkResult:
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


def apply_batch(
    blocks: Sequence[Block], pattern: Sequence[int], steps: np.ndarray, Z: np.ndarray, *, sensitivities: bool = False
) -> NetworkResult:
    """A batch of networks with one block pattern, float64 NumPy only (the solver's inner loop).

    Network j has layers (pattern[l], steps[j, l]) and acts on the collection Z[j]:
    ``steps`` is (B, L), ``Z`` is (B, N, n, d).  Returns ``end`` (B, N, n, d) and, with
    ``sensitivities``, ``d_steps`` (B, N n d, L) and ``d_initial`` (B, N, n d, n d): the
    formulas of :func:`apply`, with the layer Jacobians from
    :func:`verify.model.attention.field_and_jacobian`, so B networks cost about as many array
    operations as one.

    >>> import numpy as np
    >>> from verify.model.blocks import gaussian_blocks
    >>> blocks = gaussian_blocks(seed=0, d=2)
    >>> Z = np.random.default_rng(1).normal(size=(3, 2, 2, 2))
    >>> H = np.random.default_rng(2).uniform(-0.5, 0.5, size=(3, 6))
    >>> res = apply_batch(blocks, [0, 1] * 3, H, Z, sensitivities=True)
    >>> one = apply(blocks, list(zip([0, 1] * 3, H[1])), Z[1], sensitivities=True)
    >>> bool(np.abs(res.d_steps[1] - one.d_steps).max() < 1e-13)
    True
    """
    states, fields, jacobians = _forward(blocks, pattern, steps, Z, sensitivities)
    if not sensitivities:
        return NetworkResult(states[-1])
    D, G = backward_batch(jacobians, fields, list(range(len(pattern))), len(pattern))
    return NetworkResult(states[-1], D, G)


def _forward(blocks, pattern, steps, Z, derivatives: bool) -> tuple[list, list, list]:
    """The states Z_0, ..., Z_L of a batch of networks (steps (B, L), Z (B, N, n, d)) and, with
    ``derivatives``, each layer's field F (B, N, n d, 1) and Jacobian I + h DF (B, N, n d, n d)."""
    B, N, n, d = Z.shape
    nd = n * d
    states, fields, jacobians = [Z], [], []
    for b, h in zip(pattern, steps.T, strict=True):
        if derivatives:
            F, J = field_and_jacobian(blocks[b], Z)
            fields.append(F.reshape(B, N, nd, 1))
            jacobians.append(np.eye(nd) + h[:, None, None, None] * J)
        else:
            F = field_numpy(blocks[b], Z)
        Z = Z + h[:, None, None, None] * F
        states.append(Z)
    return states, fields, jacobians


def curvature_batch(blocks: Sequence[Block], pattern: Sequence[int], steps: np.ndarray, Z: np.ndarray,
                    d_steps: np.ndarray, d_Z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """End points of a batch of networks (as :func:`apply_batch`) and their second directional
    derivatives d^2/de^2 X_L at e = 0 when the step sizes move along ``d_steps`` (B, L) and the
    inputs along ``d_Z`` (B, N, n, d): the curvature that geodesic acceleration corrects for.

    Second-order Taylor arithmetic (no finite differences): the state is carried as a jet
    X_l + e X'_l + e^2 X''_l, each layer maps it by :func:`jet_update` with the field's jet
    (:func:`verify.model.attention.field_jet`), and the derivative is 2 X''_L.

    >>> import numpy as np
    >>> from verify.model.blocks import gaussian_blocks
    >>> blocks = gaussian_blocks(seed=0, d=2)
    >>> Z, dZ = np.random.default_rng(1).normal(size=(2, 3, 2, 2, 2))
    >>> H, dH = np.random.default_rng(2).uniform(-0.5, 0.5, size=(2, 3, 6))
    >>> end, second = curvature_batch(blocks, [0, 1] * 3, H, Z, dH, dZ)
    >>> bool(np.array_equal(end, apply_batch(blocks, [0, 1] * 3, H, Z).end)), second.shape
    (True, (3, 2, 2, 2))
    """
    z = (Z, d_Z, np.zeros_like(Z))
    for b, h, dh in zip(pattern, steps.T, d_steps.T, strict=True):
        z = jet_update(z, h[:, None, None, None], dh[:, None, None, None], field_jet(blocks[b], *z))
    return z[0], 2 * z[2]


def jet_update(z: tuple, h: np.ndarray, dh: np.ndarray, k: tuple) -> tuple:
    """The second-order jet of z + (h + e dh) k for jets z = (z0, z1, z2) and k in e."""
    return z[0] + h * k[0], z[1] + h * k[1] + dh * k[0], z[2] + h * k[2] + dh * k[1]


def backward_batch(jacobians: list, vectors: list, columns: Sequence[int], width: int) -> tuple[np.ndarray, np.ndarray]:
    """Batched chain rule through K maps with Jacobians A_k (B, N, nd, nd): column
    ``columns[k]`` of D (B, N nd, width) accumulates G_k v_k with G_k = A_K ... A_(k+1) and
    ``vectors[k]`` (B, N, nd, 1); returns D and the full product A_K ... A_1."""
    B, N, nd, _ = jacobians[0].shape
    G = np.broadcast_to(np.eye(nd), (B, N, nd, nd))
    D = np.zeros((B, N, nd, width))
    for k in range(len(jacobians) - 1, -1, -1):
        D[..., columns[k]] += (G @ vectors[k])[..., 0]
        G = G @ jacobians[k]
    return D.reshape(B, N * nd, width), G
