"""SymPy brackets for tiny cases: an independent cross-check and a benchmark baseline.

The attention field of one sequence is written out symbolically in the n d token
coordinates (block entries as 40-digit SymPy Floats holding the exact binary64 values), and
brackets are taken literally, [f, g] = J_g f - J_f g, then evaluated at the sequence in
mpmath at the requested number of digits.  Only for n = 2, d <= 2,
degree <= 3: the expressions grow very fast.
"""

from __future__ import annotations

import mpmath
import numpy as np
import sympy as sp


def symbolic_field(Q, K, V, n, d, beta=1.0, causal=False):
    x = sp.Matrix(sp.symbols(f"x0:{n * d}"))
    toks = [x[i * d:(i + 1) * d, :] for i in range(n)]
    Qs, Ks, Vs = (sp.Matrix(np.asarray(M).tolist()).applyfunc(lambda v: sp.Float(float(v), 40)) for M in (Q, K, V))
    b = sp.Float(float(beta), 40)
    comps = []
    for i in range(n):
        js = range(i + 1) if causal else range(n)
        w = [sp.exp(b * ((Qs * toks[i]).T * (Ks * toks[j]))[0]) for j in js]
        S = sum(w)
        Fi = sum((wj * (Vs * toks[j]) for wj, j in zip(w, js, strict=True)), sp.zeros(d, 1)) / S
        comps.extend(list(Fi))
    return x, sp.Matrix(comps)


def bracket_columns(blocks, seq, digits=30):
    """{word: value at seq (one sequence, (n, d))} for the Hall words of degree <= 3.

    SymPy differentiates each field twice symbolically (Jacobian J and Hessian H); the values
    at the sequence are then combined by the bracket formulas written out by hand:
      [f,g]      = J_g f - J_f g,
      D[f,g] w   = H_g(f, w) + J_g J_f w - H_f(g, w) - J_f J_g w,
      [h,[f,g]]  = D[f,g] h - J_h [f,g].
    """
    n, d = seq.shape
    D = n * d
    evaluated = []
    with mpmath.workdps(digits):
        point = [mpmath.mpf(float(v)) for v in seq.ravel()]
        for b in blocks:
            x, F = symbolic_field(b.Q, b.K, b.V, n, d, b.beta, b.causal)
            J = F.jacobian(x)
            H = [[[sp.diff(J[i, k], x[m]) for m in range(D)] for k in range(D)] for i in range(D)]
            flat = list(F) + list(J) + [h for i in H for k in i for h in k]
            vals = sp.lambdify(list(x), flat, modules="mpmath", cse=True)(*point)
            f = mpmath.matrix(vals[:D])
            Jm = mpmath.matrix(D, D)
            for i in range(D):
                for k in range(D):
                    Jm[i, k] = vals[D + i * D + k]
            Hm = [[[vals[D + D * D + (i * D + k) * D + m] for m in range(D)] for k in range(D)] for i in range(D)]
            evaluated.append((f, Jm, Hm))
        (f0, J0, H0), (f1, J1, H1) = evaluated

        def hess(H, a, w):
            return mpmath.matrix([sum(H[i][k][m] * a[k] * w[m] for k in range(D) for m in range(D)) for i in range(D)])

        b01 = J1 * f0 - J0 * f1

        def d_b01(w):
            return hess(H1, f0, w) + J1 * (J0 * w) - hess(H0, f1, w) - J0 * (J1 * w)

        cols = {"0": f0, "1": f1, "[0,1]": b01,
                "[0,[0,1]]": d_b01(f0) - J0 * b01, "[1,[0,1]]": d_b01(f1) - J1 * b01}
        return {w: np.array([float(v) for v in c]) for w, c in cols.items()}
