"""An independent implementation of the conventions of DESIGN §2, for cross-checks only.

It shares no code with ``verify``: explicit loops over sequences and tokens, SciPy's DOP853 for
flows.  It is what a referee would write in a few lines to replay a witness file, and the
tests use it to make witnesses that ``verify check`` must accept.
"""

from __future__ import annotations

import json
import math

import mpmath
import numpy as np
from scipy.integrate import solve_ivp


def field(Q, K, V, X, beta=1.0, causal=False, exp=math.exp):
    """F(X)_i = sum_j softmax_j(beta <Q x_i, K x_j>) V x_j, one sequence at a time.  Float64
    arrays, or object arrays of mpmath numbers with ``exp=mpmath.exp``."""
    out = np.zeros_like(X)
    for s in range(X.shape[0]):
        for i in range(X.shape[1]):
            js = range(i + 1) if causal else range(X.shape[1])
            logits = [beta * (Q @ X[s, i]) @ (K @ X[s, j]) for j in js]
            top = max(logits)
            w = [exp(v - top) for v in logits]
            total = sum(w)
            out[s, i] = sum((wj / total) * (V @ X[s, j]) for wj, j in zip(w, js, strict=True))
    return out


def flow(blocks, steps, X, beta=1.0, causal=False, rtol=1e-13, atol=1e-14):
    """exp(tau_K F_K) o ... o exp(tau_1 F_1) (X) with DOP853; blocks are (Q, K, V) triples."""
    Y = np.array(X, dtype=float)
    for b, tau in steps:
        Q, K, V = blocks[b]
        if tau == 0:
            continue
        def rhs(t, y, Q=Q, K=K, V=V, shape=Y.shape):
            return field(Q, K, V, y.reshape(shape), beta, causal).ravel()

        sol = solve_ivp(rhs, (0.0, tau), Y.ravel(), method="DOP853", rtol=rtol, atol=atol)
        Y = sol.y[:, -1].reshape(Y.shape)
    return Y


def network(blocks, layers, X, beta=1.0, causal=False, dps=None):
    """X_l = X_(l-1) + h_l F_(b_l)(X_(l-1)); in float64, or at ``dps`` digits (mpmath numbers
    throughout: weights, steps given as floats or decimal strings, inputs; the image is an
    object array of mpmath numbers, so a difference to the targets keeps its digits)."""
    if dps is None:
        Y = np.array(X, dtype=float)
        for b, h in layers:
            Y = Y + h * field(*blocks[b], Y, beta, causal)
        return Y
    with mpmath.workdps(dps):
        mp = np.vectorize(mpmath.mpf, otypes=[object])  # floats exactly, decimal strings to dps digits
        mats = [tuple(mp(np.asarray(M)) for M in blk) for blk in blocks]
        Y = mp(np.asarray(X))
        for b, h in layers:
            Y = Y + mpmath.mpf(h) * field(*mats[b], Y, mpmath.mpf(beta), causal, exp=mpmath.exp)
        return Y


def witness(blocks, X, depth, steps, tolerance, beta=1.0, causal=False):
    """A witness document built by this implementation (targets = its own replay)."""
    Y = flow(blocks, steps, X, beta, causal) if depth == "continuous" else network(blocks, steps, X, beta, causal)
    key, length = ("steps", "duration") if depth == "continuous" else ("layers", "step")
    return {
        "schema": "attention-interpolation-witness/1",
        "attention": {"causal": causal, "beta": beta},
        "blocks": [{"Q": np.asarray(Q).tolist(), "K": np.asarray(K).tolist(), "V": np.asarray(V).tolist()} for Q, K, V in blocks],
        "inputs": np.asarray(X).tolist(),
        "targets": Y.tolist(),
        "depth": depth,
        key: [{"block": b, length: t} for b, t in steps],
        "tolerance": tolerance,
        "provenance": {"made_by": "property_tests/independent.py"},
    }


def dumps(doc) -> str:
    return json.dumps(doc)
