"""An independent replay of witness files: the conventions of docs/conventions.md, written again.

It shares no code with ``verify`` and imports none of it: explicit loops over sequences and
tokens, SciPy's DOP853 for flows in float64, and Gragg-Bulirsch-Stoer extrapolation in mpmath
for flows at high precision (``verify`` integrates by Taylor series).  It is what a referee would
write in a few lines to replay a witness file; installed with the suite as the command
``verify-replay W.json [--dps D]`` (:func:`main`), and the tests use it to make witnesses that
``verify check`` must accept.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import stat
import sys
import time

import mpmath
import numpy as np
from scipy.integrate import solve_ivp


def field(Q, K, V, X, beta=1.0, causal=False, exp=math.exp):
    """F(X)_i = sum_j softmax_j(beta <Q x_i, K x_j>) V x_j, one sequence at a time.  Float64
    arrays, or object arrays of mpmath numbers with ``exp=mpmath.exp``."""
    out = np.zeros_like(X)
    for s in range(X.shape[0]):
        qx, kx, vx = ([M @ x for x in X[s]] for M in (Q, K, V))
        for i in range(X.shape[1]):
            js = range(i + 1) if causal else range(X.shape[1])
            logits = [beta * (qx[i] @ kx[j]) for j in js]
            top = max(logits)
            w = [exp(v - top) for v in logits]
            total = sum(w)
            out[s, i] = sum((wj / total) * vx[j] for wj, j in zip(w, js, strict=True))
    return out


def flow(blocks, steps, X, beta=1.0, causal=False, rtol=1e-13, atol=1e-14, dps=None, tol=None, deadline=None):
    """exp(tau_K F_K) o ... o exp(tau_1 F_1) (X); blocks are (Q, K, V) triples.  In float64 with
    DOP853, or at ``dps`` digits with :func:`extrapolated_flow` (durations given as floats or
    decimal strings; the image is an object array of mpmath numbers)."""
    if dps is not None:
        return extrapolated_flow(blocks, steps, X, beta, causal, dps, tol, deadline=deadline)
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


def extrapolated_flow(blocks, steps, X, beta=1.0, causal=False, dps=30, tol=None, max_columns=12, deadline=None):
    """The flow at ``dps`` digits by Gragg-Bulirsch-Stoer: each macro step H is integrated by the
    modified midpoint rule with 2, 4, 6, ... substeps, whose results are extrapolated to zero
    substep size in powers of (H / n)^2 (Aitken-Neville); a step is accepted when two successive
    extrapolations agree to ``tol`` relative (default 10^(5 - dps)), else H is halved (below
    1e-12 it gives up: ArithmeticError).  H doubles after a step that converged within 6 columns."""
    with mpmath.workdps(dps):
        mats, Y = _mp_inputs(blocks, X)
        H0 = mpmath.mpf("0.25")
        tol = mpmath.mpf(10) ** (5 - dps) if tol is None else mpmath.mpf(tol)
        for b, tau in steps:
            def f(Z, blk=mats[b]):
                return field(*blk, Z, mpmath.mpf(beta), causal, exp=mpmath.exp)

            left = mpmath.mpf(tau)
            while left != 0:
                H = left if abs(left) <= H0 else mpmath.sign(left) * H0
                Z, columns = _extrapolated_step(f, Y, H, tol, max_columns)
                if Z is None:
                    H0 /= 2
                    if H0 < 1e-12:
                        raise ArithmeticError(f"the extrapolation does not converge in step (block {b}, duration {tau})")
                    continue
                Y, left = Z, left - H
                if deadline is not None and time.perf_counter() > deadline:
                    raise ArithmeticError("the extrapolation ran past its deadline")
                if columns <= 6:
                    H0 *= 2
        return Y


def _extrapolated_step(f, Y, H, tol, max_columns):
    """One Gragg-Bulirsch-Stoer step of size H from Y: (image, columns used), or (None, columns)."""
    table = []
    for j in range(1, max_columns + 1):
        n = 2 * j
        h = H / n
        z0, z1 = Y, Y + h * f(Y)
        for _ in range(n - 1):
            z0, z1 = z1, z0 + 2 * h * f(z1)
        row = [(z0 + z1 + h * f(z1)) / 2]
        for k in range(1, j):
            ratio = mpmath.mpf(n) ** 2 / (n - 2 * k) ** 2
            row.append(row[k - 1] + (row[k - 1] - table[-1][k - 1]) / (ratio - 1))
        if j > 1:
            change = max(abs(v) for v in (row[-1] - table[-1][-1]).ravel())
            if change <= tol * (1 + max(abs(v) for v in row[-1].ravel())):
                return row[-1], j
        table.append(row)
    return None, max_columns


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
        mats, Y = _mp_inputs(blocks, X)
        for b, h in layers:
            Y = Y + mpmath.mpf(h) * field(*mats[b], Y, mpmath.mpf(beta), causal, exp=mpmath.exp)
        return Y


def _mp_inputs(blocks, X):
    """The blocks' matrices and X as object arrays of mpmath numbers at the working precision
    (floats exactly, decimal strings to the working digits)."""
    mp = np.vectorize(mpmath.mpf, otypes=[object])
    return [tuple(mp(np.asarray(M)) for M in blk) for blk in blocks], mp(np.asarray(X))


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
        "provenance": {"made_by": "verify_replay (the independent replay)"},
    }


def replay(doc, dps=None):
    """max |image - target| of a witness document (the JSON of docs/conventions.md, read here
    without ``verify``): in float64 (DOP853 or the network's layers), or at ``dps`` digits."""
    blocks = [tuple(np.array(blk[k], dtype=object if dps else float) for k in "QKV") for blk in doc["blocks"]]
    beta, causal = doc["attention"]["beta"], doc["attention"]["causal"]
    continuous = doc["depth"] == "continuous"
    key, length = ("steps", "duration") if continuous else ("layers", "step")
    steps = [(s["block"], s[length] if dps else float(s[length])) for s in doc[key]]
    X = np.array(doc["inputs"], dtype=object if dps else float)
    if dps is None:
        Y = flow(blocks, steps, X, beta, causal) if continuous else network(blocks, steps, X, beta, causal)
        return float(np.max(np.abs(Y - np.array(doc["targets"], dtype=float))))
    with mpmath.workdps(dps):
        Y = flow(blocks, steps, X, beta, causal, dps=dps) if continuous else network(blocks, steps, X, beta, causal, dps=dps)
        T = np.vectorize(mpmath.mpf, otypes=[object])(np.array(doc["targets"], dtype=object))
        return float(max(abs(a - b) for a, b in zip(Y.ravel(), T.ravel(), strict=True)))


def dumps(doc) -> str:
    return json.dumps(doc)


MAX_BYTES = 64 * 2**20  # a witness of 100 000 steps at 17 digits is about 5 MB
MAX_STEPS = 100_000


def load(path: str) -> dict:
    """A witness document from a file: a regular file of at most MAX_BYTES, a JSON object with the
    fields :func:`replay` reads (ValueError naming the first problem)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise ValueError(f"{path}: cannot open ({exc.strerror})") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise ValueError(f"{path}: not a regular file")
    with os.fdopen(fd, "rb") as f:
        if st.st_size > MAX_BYTES:
            raise ValueError(f"{path}: {st.st_size} bytes, over the limit of {MAX_BYTES}")
        raw = f.read(MAX_BYTES + 1)
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: not a JSON witness ({str(exc)[:80]})") from None
    if not isinstance(doc, dict) or doc.get("depth") not in ("continuous", "finite"):
        raise ValueError(f"{path}: not a witness (an object with depth 'continuous' or 'finite')")
    key, length = ("steps", "duration") if doc["depth"] == "continuous" else ("layers", "step")
    for field_ in ("blocks", "inputs", "targets", "attention", "tolerance", key):
        if field_ not in doc:
            raise ValueError(f"{path}: the witness lacks the field {field_!r}")
    steps = doc[key]
    if not isinstance(steps, list) or len(steps) > MAX_STEPS or not all(
            isinstance(s, dict) and s.get("block") in (0, 1) and length in s for s in steps):
        raise ValueError(f"{path}: {key} must be a list of at most {MAX_STEPS} objects with block 0 or 1 and {length}")
    if not isinstance(doc["blocks"], list) or len(doc["blocks"]) != 2 or not all(
            isinstance(b, dict) and all(m in b for m in "QKV") for b in doc["blocks"]):
        raise ValueError(f"{path}: blocks must be two objects with Q, K and V")
    return doc


def main(argv: list[str] | None = None) -> int:
    """``verify-replay W.json [--dps D]``: max |image - target| of the witness in float64 (DOP853,
    or the network's layers) and at D digits (Gragg-Bulirsch-Stoer, or the layers in mpmath);
    exit 0 when the high-precision replay is within the witness's tolerance, 1 when not, 2 for
    bad input (one line)."""
    parser = argparse.ArgumentParser(prog="verify-replay", description="Replay a witness file with an implementation "
                                     "that shares no code with verify.")
    parser.add_argument("witness", help="the witness file (JSON), e.g. OUT/witnesses/<row>.json")
    parser.add_argument("--dps", type=int, default=30, help="digits of the high-precision replay (10 to 200; default 30)")
    args = parser.parse_args(argv)
    try:
        if not 10 <= args.dps <= 200:
            raise ValueError(f"--dps {args.dps}: give 10 to 200 digits")
        doc = load(args.witness)
        low = replay(doc)
        high = replay(doc, args.dps)
        tolerance = float(doc["tolerance"])
    except (ValueError, TypeError, KeyError, IndexError, ArithmeticError) as exc:
        print(f"verify-replay: {str(exc)[:300] or type(exc).__name__}", file=sys.stderr)
        return 2
    how = "DOP853" if doc["depth"] == "continuous" else "the layers"
    print(f"max |image - target|: {low:.3e} in float64 ({how}), {high:.3e} at {args.dps} digits; tolerance {tolerance:.3e}")
    return 0 if high <= tolerance else 1
