"""Taylor coefficients of attention trajectories (the jet of the flow), with tangents.

The trajectory of dX/dt = F_theta(X), X(0) = X_0, has a Taylor series X(t) = sum_k X_k t^k
whose coefficients follow from the field's structure by the classical recurrences of
automatic Taylor arithmetic (exact up to rounding; no finite differences):

    L_k = beta sum_{j<=k} (X_j Q^T)(X_{k-j} K^T)^T                  logits
    E_0 = exp(L_0 - c),  E_k = (1/k) sum_{j=1..k} j L~_j E_{k-j}       exp (c: row maxima)
    S_k = sum_cols E_k,  P_k = (E_k - sum_{j=1..k} S_j P_{k-j}) / S_0   softmax
    F_k = sum_{j<=k} P_j (X_{k-j} V^T),       X_{k+1} = F_k / (k + 1).

with L~_k = L_k - <P_0, L_k> row by row (k >= 1): softmax ignores a shift of each row by any
function of t, and without the centring the exp series grows with the rows' common motion
and cancels in P_k (where tokens reach |x| ~ 10, a 30-digit flow whose high orders are taken
in float64 lost up to 8 digits that way; float64 flows lost about one).

Under a causal mask E_0 vanishes on the excluded entries, and by the recurrence so does every
E_k, so masking needs no further care.

Tangents: the same recurrences differentiated once (forward-mode automatic differentiation
of the series) give the coefficients dX_k of the derivative of X(t) with respect to X_0 in a
batch of directions U (leading axis r).  Summing them, sum_k dX_k h^k, is the exact
derivative of the computed Taylor step.

Cost: O(order^2) batched matrix products per step; every series is one preallocated array, so
each coefficient is a single batched product over slices and the work vectorises in every backend.

>>> import numpy as np
>>> from verify.model.blocks import gaussian_blocks
>>> from verify.model.attention import field
>>> b, _ = gaussian_blocks(seed=0, d=2)
>>> X = np.random.default_rng(1).normal(size=(2, 3, 2))
>>> Xk, _ = coefficients(b, X, order=4)
>>> bool(np.allclose(Xk[1], field(b, X)))
True
"""

from __future__ import annotations

from typing import Any

import numpy as np

from verify.model.attention import beta_in, block_arrays, dominant, on_dominant, shifted_exp
from verify.model.backend import midpoints, namespace, namespace_of
from verify.model.blocks import Block


def cauchy(xp: Any, A: Any, B: Any, k: int, lo: int = 0, hi: int | None = None) -> Any:
    """sum_{j=lo..hi} A_j @ B_{k-j} (hi = k by default), one batched matrix product over the
    series axis; the callers leave out the terms that vanish along a polynomial."""
    hi = k if hi is None else hi
    stop = k - hi - 1
    A, B = A[lo: hi + 1, ...], B[k - lo: stop if stop >= 0 else None: -1, ...]
    if hasattr(xp, "cauchy"):  # a namespace with the sum of products in one piece (float balls)
        return xp.cauchy(A, B)
    return xp.sum(xp.matmul(A, B), axis=0)


def _products(xp: Any, A: Any, B: Any, k: int) -> Any:
    """sum_{j=1..k} A_j * B_{k-j} (elementwise)."""
    A, B = A[1 : k + 1, ...], B[k - 1 :: -1, ...]
    if hasattr(xp, "products"):
        return xp.products(A, B)
    return xp.sum(A * B, axis=0)


_STATES = ("X", "QX", "KXt", "VX", "L", "jL", "E", "S", "P", "Gm", "F")  # the series without directions (the others: tangents)


class _Series(dict):
    """Named Taylor series, each stored as one preallocated array with the order as first axis
    (slices of it are views, so the Cauchy products need no stacking)."""

    def __init__(self, xp: Any, size: int, top: np.ndarray | None = None):
        super().__init__()
        self.xp, self.size = xp, size
        self.dominant = top  # balls: each row's entry the logits are centred on (:func:`centred`)
        self.anchor = self.va = None  # balls: the anchor a of each sequence's keys and values, and V a (:func:`_recur`)

    def put(self, name: str, k: int, value: Any) -> Any:
        if name not in self:
            dtype = getattr(value, "dtype", None)
            self[name] = self.xp.zeros((self.size, *value.shape), dtype=dtype)
        self[name][k, ...] = value
        return value

    def rounded(self, K: int) -> _Series:
        """A float64 NumPy copy holding orders 0..K (the rest zero), to continue the series in."""
        out = _Series(namespace("numpy"), self.size)
        for name, a in self.items():
            out[name] = np.zeros(a.shape)
            out[name][: K + 1, ...] = a[: K + 1, ...].astype(float)
        return out


def coefficients(
    block: Block, X: Any, order: int, U: Any | None = None, exact_orders: int | None = None
) -> tuple[list[Any], list[Any] | None]:
    """Taylor coefficients X_0..X_order of the trajectory through X (shape (..., n, d)).

    With a batch of directions ``U`` (shape (r, ..., n, d)), also the coefficients of the
    tangent trajectories, each of shape (r, ..., n, d); otherwise the second item is None.

    ``exact_orders = K`` (high precision only) computes the coefficients of orders up to K in
    the namespace of X and the rest in float64 NumPy, from float64 roundings of the lower ones
    (a split series; see :func:`verify.model.flow.flow`, which picks K so that the float64 tail of
    every step it takes is far below its rounding unit).  The coefficients above K are then
    float64 arrays.
    """
    xp = namespace_of(X)
    tan = U is not None
    if tan:
        X = xp.expand_dims(X, axis=0)
        U = xp.broadcast_to(U, (U.shape[0], *X.shape[1:]))
    s = _Series(xp, order + 1)
    s.put("X", 0, X)
    if tan:
        s.put("dX", 0, U)
    K = order if exact_orders is None else max(1, min(exact_orders, order))
    _recur(s, block, 0, K, tan)
    tail = s
    if K < order:
        tail = s.rounded(K)
        _recur(tail, block, K, order, tan)

    def series(name: str) -> list[Any]:
        return [(s if k <= K else tail)[name][k, ...] for k in range(order + 1)]

    if tan:
        return [x[0, ...] for x in series("X")], series("dX")
    return series("X"), None


def along_polynomial(block: Block, X: Any, degree: int, order: int, U: Any | None = None,
                     top: np.ndarray | None = None) -> _Series:
    """The series of the field along the trajectory's Taylor polynomial of ``degree`` p, to
    ``order`` q > p: with T(t) = sum_(k<=p) X_k t^k, the coefficients F_k of F(T(t)), the
    centred logits L_k and V T(t) (``VX``) for k < q, plus ``QX``, ``KXt``, ``E``, ``P`` as in
    the recurrences, one array each with the order as first axis.  With directions ``U`` (as
    in :func:`coefficients`), also their derivatives (``dX``, ``dF``, ``dQX``, ``dKXt``,
    ``dVX``, ``dP``, ...), each with the directions as second axis.  In ball arithmetic the
    logits (and their derivatives) are centred on the entries ``top`` (:func:`centred`; by
    default each row's largest weight), which ``s.dominant`` records, so that two series
    centred alike can be combined.

    F_k = (k + 1) X_(k+1) for k < p (T agrees with the trajectory to order p); above, F(T(t))
    is no longer the trajectory's field, and its coefficients measure how far T is from solving
    the equation (the validated steps of :mod:`verify.verdicts.enclosure` bound their tail).

    >>> import numpy as np
    >>> from verify.model.blocks import gaussian_blocks
    >>> b, _ = gaussian_blocks(seed=0, d=2)
    >>> X = np.random.default_rng(1).normal(size=(2, 3, 2))
    >>> s = along_polynomial(b, X, degree=4, order=9)
    >>> Xk, _ = coefficients(b, X, order=5)
    >>> bool(np.allclose(s["F"][4], 5 * Xk[5])), bool(np.all(s["X"][5:] == 0))
    (True, True)
    """
    xp = namespace_of(X)
    s = _Series(xp, order + 1, top)
    if U is not None:
        X = xp.expand_dims(X, axis=0)
        s.put("dX", 0, xp.broadcast_to(U, (U.shape[0], *X.shape[1:])))
    s.put("X", 0, X)
    _recur(s, block, 0, order, U is not None, frozen=degree)
    if U is not None:  # the states without the directions' axis
        for name in _STATES:
            s[name] = s[name][:, 0, ...]
    return s


def with_defects(block: Block, X: Any, degree: int) -> tuple[list[Any], list[Any]]:
    """An exact polynomial T(t) = sum_(k<=p) T_k t^k near the trajectory through X (balls, Arb
    or float64; X exact) and its defect's low coefficients: T_0 = X, T_(k+1) the midpoint of
    F_k / (k + 1) with F_k the coefficient of F(T(t)), taken as exact, and D_k = F_k - (k + 1)
    T_(k+1) (k < p), balls holding the coefficients of F(T(t)) - T'(t) below order p.

    Each order starts from exact numbers, so the balls carry one order's rounding and no more:
    a ball recurrence feeds each radius into the next order through the logits, weights and
    field, which multiplied it by about 500 per order where tokens reach |x| ~ 190 (c32a's
    states, docs/verdicts.md), while the coefficients grew by 6.

    >>> import numpy as np
    >>> from verify.model.blocks import gaussian_blocks
    >>> from verify.model.float_balls import Balls
    >>> b, _ = gaussian_blocks(seed=0, d=2)
    >>> T, D = with_defects(b, Balls(np.random.default_rng(1).normal(size=(2, 3, 2))), 6)
    >>> len(T), len(D), bool(np.all(T[3].r == 0)), float(np.max(D[2].r)) < 1e-14
    (7, 6, True, True)
    """
    xp = namespace_of(X)
    s = _Series(xp, degree + 1)
    s.put("X", 0, X)
    _recur(s, block, 0, degree, False, frozen=degree, drop=True)
    return [s["X"][k, ...] for k in range(degree + 1)], [s["D"][k, ...] for k in range(degree)]


def along_given(block: Block, T: list[Any], order: int, dT: list[Any] | None = None,
                top: np.ndarray | None = None) -> _Series:
    """The series of the field along a given polynomial T(t) = sum_(k<=p) T_k t^k (balls that
    hold its coefficients), to ``order`` q: as :func:`along_polynomial`, but T is not the
    trajectory's, so ``F`` holds every coefficient F_k of F(T(t)) (k < q) and F_k - (k + 1) T_(k+1)
    is T's defect.  With ``dT`` (p + 1 arrays of shape (r, ..., n, d)), T's derivatives in r
    directions, the derivatives ``dF`` etc. of the series in those directions, to order p only
    (each tangent array holds orders 0..p): above p the validated step bounds F_k over the set
    by its balls, within a factor 2 of the mean-value form where the set's spread is below 1e-7
    (docs/verdicts.md), and the tangents' orders p + 1..q were 58 % of their cost."""
    xp = namespace_of(T[0])
    s = _Series(xp, order + 1, top)
    lead = (lambda a: xp.expand_dims(a, axis=0)) if dT is not None else (lambda a: a)
    for k, Tk in enumerate(T):
        s.put("X", k, lead(Tk))
        if dT is not None:
            s.put("dX", k, dT[k])
    _recur(s, block, 0, order, dT is not None, frozen=len(T) - 1, given=True)
    if dT is not None:
        for name in _STATES:
            s[name] = s[name][:, 0, ...]
        for name in [name for name in s if name not in _STATES]:
            s[name] = s[name][: len(T)]
    return s


def along_given_pair(block: Block, T: list[Any], S: list[Any], order: int, dS: list[Any]) -> tuple[_Series, _Series]:
    """``along_given(block, T, order)`` and ``along_given(block, S, order, dS, top=...)``, S's
    rows centred on the entries T's series chooses (so that the two combine in mean-value
    forms), computed in one batch: T and S stacked as 2N sequences (T's tangents are computed
    and dropped).  Each sequence's arithmetic does not depend on the batch, so these are the
    numbers of the two calls, in about 90 % of their time (at the validated steps' sizes,
    NumPy's cost per call dominates).  Float balls only.

    >>> import numpy as np
    >>> from verify.model.blocks import gaussian_blocks
    >>> from verify.model.float_balls import Balls
    >>> from verify.model.attention import basis_directions
    >>> from verify.model.float_balls import namespace as balls
    >>> b, _ = gaussian_blocks(seed=0, d=2)
    >>> T, _ = with_defects(b, Balls(np.random.default_rng(1).normal(size=(2, 3, 2))), 4)
    >>> S = [Balls(t.m, 1e-9) for t in T]
    >>> _, U = coefficients(b, T[0].m, 4, U=basis_directions(balls(), 3, 2).m)
    >>> sc, sb = along_given_pair(b, T, S, 8, [Balls(u) for u in U])
    >>> one = along_given(b, T, 8)
    >>> two = along_given(b, S, 8, [Balls(u) for u in U], top=one.dominant)
    >>> same = lambda x, y: set(x) == set(y) and all(
    ...     np.array_equal(x[k].m, y[k].m) and np.array_equal(x[k].r, y[k].r) for k in y)
    >>> same(sc, one), same(sb, two)
    (True, True)
    """
    N = T[0].shape[-3]
    top = along_given(block, T[:1], 1).dominant  # order 0 alone: the entries along_given(T) centres on

    def stacked(a: Any, b: Any, axis: int = -3) -> Any:
        return type(a)(np.concatenate([a.m, b.m], axis=axis), np.concatenate([a.r, b.r], axis=axis))

    both = along_given(block, [stacked(t, u) for t, u in zip(T, S, strict=True)], order,
                       [stacked(d, d) for d in dS], top=np.concatenate([top, top], axis=-3))
    centre, on_set = _Series(both.xp, both.size, top), _Series(both.xp, both.size, top)
    for name, a in both.items():
        axis = 1 if name in _STATES else 2  # (order, sequences, ...) or (order, directions, sequences, ...)
        cut = (slice(None),) * axis
        if name in _STATES:
            centre[name] = type(a)(a.m[cut + (slice(None, N),)], a.r[cut + (slice(None, N),)])
        on_set[name] = type(a)(a.m[cut + (slice(N, None),)], a.r[cut + (slice(N, None),)])
    va = both.va
    centre.va, on_set.va = type(va)(va.m[0, :N], va.r[0, :N]), type(va)(va.m[:, N:], va.r[:, N:])
    return centre, on_set


def _exact_midpoints(x: Any) -> Any:
    """The balls' midpoints as exact balls (radius 0) of the same kind."""
    if hasattr(x, "m"):
        return type(x)(x.m)
    import flint

    return np.vectorize(lambda z: flint.arb(z.mid()), otypes=[object])(x)


def centred(xp: Any, L: Any, P0: Any, top: np.ndarray | None = None) -> Any:
    """Logits' coefficients (or their derivatives) centred row by row, which softmax ignores:
    less the P_0-weighted mean of the row, or, in ball arithmetic (``xp.balls``), less the row's
    entry marked in ``top`` (:func:`dominant`), which is then exactly 0.  Where attention is
    nearly hard (a weight near 1, logits of tens), balls centred by the mean lose the softmax's
    cancellation: their radii grew by 10-30 per Taylor order (a float64 ball's reached its
    midpoint by order 6, Arb's at 40 digits by order 24, on a state of the solver's N n d = 18
    witnesses), and a Jacobian's over a box of width w was 470 w against 0.3 w; the dominant
    entry's coefficients are then exactly 0 and the others weigh by their small E_0."""
    if not getattr(xp, "balls", False):
        return L - xp.sum(P0 * L, axis=-1, keepdims=True)
    return on_dominant(xp, L, dominant(P0) if top is None else top)


def _anchor(X: Any) -> np.ndarray:
    """Each sequence's mean token, by midpoints, as exact floats (shape (..., 1, d))."""
    return np.mean(midpoints(X), axis=-2, keepdims=True)


def _recur(s: _Series, block: Block, start: int, stop: int, tan: bool, frozen: int | None = None,
           given: bool = False, drop: bool = False) -> None:
    """The recurrences for orders start..stop - 1, giving X_{start+1}..X_stop (and dX), in the
    namespace of ``s``; with ``frozen`` p, X stays the polynomial of degree p (X_k = 0 above p)
    and the field's coefficients are kept as ``F``.  ``given``: X (and dX) hold a polynomial
    of degree p already, which the recurrences leave as it is; ``drop``: X_(k+1) is the exact
    midpoint of F_k / (k + 1) and ``D`` keeps F_k - (k + 1) X_(k+1) (:func:`with_defects`).

    In ball arithmetic keys and values are taken from an anchor a per sequence (``s.anchor``:
    its mean token at order 0, exact): softmax ignores the logits' row constants, so
    L_ij = beta (Q x_i).(K (x_j - a)) up to one, and sum_j P_ij V x_j = V a + sum_j P_ij V (x_j - a)
    (``VX`` then holds V (X - a) at order 0, ``s.va`` = V a).  Tokens far from the origin but near
    each other (|x| ~ 30, differences ~ 1: a control that drives a sequence away) made every
    product of the recurrences carry |x| where the result is of size |x_j - x_k|: the balls
    grew by about 1e4 per order against the series' 1.5 (docs/verdicts.md, issue 51)."""
    xp = s.xp
    Qt, Kt, Vt = block_arrays(block, xp, s["X"])
    beta = beta_in(block, xp)
    balls = getattr(xp, "balls", False)
    for k in range(start, stop):
        # along a polynomial of degree p the series of X, QX, KX, VX vanish above p: only j with
        # k - j <= p (and j <= p where both factors are such series) contribute to order k
        lo, both = (0, k) if frozen is None else (max(0, k - frozen), min(k, frozen))
        moving = frozen is None or k <= frozen  # above p the polynomial's X_k, QX_k, KX_k, VX_k (and tangents) stay 0
        Xk = s["X"][k, ...]
        if moving:
            s.put("QX", k, xp.matmul(Xk, Qt))
            if balls and k == 0:  # keys and values from the anchor a: exact, and far narrower balls
                s.anchor = _anchor(Xk)
                s.va = xp.matmul(xp.asarray(s.anchor), Vt)
                Xk = Xk - xp.asarray(s.anchor)
            s.put("KXt", k, xp.matrix_transpose(xp.matmul(Xk, Kt)))
            s.put("VX", k, xp.matmul(Xk, Vt))
        L = beta * cauchy(xp, s["QX"], s["KXt"], k, lo, both)
        if k:
            L = centred(xp, L, s["P"][0, ...], s.dominant)
        s.put("L", k, L)
        s.put("jL", k, k * L)
        if k == 0:
            E = s.put("E", k, shifted_exp(xp, L, block.causal))
            s.put("S", k, xp.sum(E, axis=-1, keepdims=True))
            P = s.put("P", k, E / s["S"][0, ...])
            if balls and s.dominant is None:
                s.dominant = dominant(P)  # one choice for every order (and for a series that shares it)
        elif balls:  # the softmax's equation P' = P o (L' - <P, L'>) (module docstring)
            s.put("Gm", k, s["jL"][k, ...] - xp.sum(_products(xp, s["jL"], s["P"], k), axis=-1, keepdims=True))
            P = s.put("P", k, _products(xp, s["Gm"], s["P"], k) / k)
        else:
            E = s.put("E", k, _products(xp, s["jL"], s["E"], k) / k)
            s.put("S", k, xp.sum(E, axis=-1, keepdims=True))
            P = s.put("P", k, (E - _products(xp, s["S"], s["P"], k)) / s["S"][0, ...])
        F = cauchy(xp, s["P"], s["VX"], k, lo)
        if balls and k == 0:
            F = F + s.va  # sum_j P_ij V a = V a; above order 0 the weights' coefficients sum to 0
        if frozen is None:
            s.put("X", k + 1, F / (k + 1))
        else:
            s.put("F", k, F)
            if k < frozen and drop:
                Xn = s.put("X", k + 1, _exact_midpoints(F / (k + 1)))
                s.put("D", k, F - (k + 1) * Xn)
            elif k < frozen and not given:
                s.put("X", k + 1, F / (k + 1))
        if not tan or (given and k > frozen):  # a given polynomial's tangents stop at its degree
            continue
        if moving:
            dXk = s["dX"][k, ...]
            s.put("dQX", k, xp.matmul(dXk, Qt))
            s.put("dKXt", k, xp.matrix_transpose(xp.matmul(dXk, Kt)))
            s.put("dVX", k, xp.matmul(dXk, Vt))
        dL = beta * (cauchy(xp, s["dQX"], s["KXt"], k, lo, both) + cauchy(xp, s["QX"], s["dKXt"], k, lo, both))
        if s.dominant is not None:  # balls: the same row shifts as L (softmax's derivative ignores them too)
            dL = centred(xp, dL, P, s.dominant)
        s.put("dL", k, dL)
        s.put("jdL", k, k * dL)
        if balls:
            if k == 0:
                s.put("dP", k, P * (dL - xp.sum(P * dL, axis=-1, keepdims=True)))
            else:
                dm = xp.sum(_products(xp, s["jdL"], s["P"], k) + _products(xp, s["jL"], s["dP"], k), axis=-1, keepdims=True)
                s.put("dGm", k, s["jdL"][k, ...] - dm)
                s.put("dP", k, (_products(xp, s["dGm"], s["P"], k) + _products(xp, s["Gm"], s["dP"], k)) / k)
        else:
            S0 = s["S"][0, ...]
            if k == 0:
                dE = s.put("dE", k, E * dL)
            else:
                dE = s.put("dE", k, (_products(xp, s["jdL"], s["E"], k) + _products(xp, s["jL"], s["dE"], k)) / k)
            s.put("dS", k, xp.sum(dE, axis=-1, keepdims=True))
            rest = (_products(xp, s["dS"], s["P"], k) + _products(xp, s["S"], s["dP"], k)) if k else 0
            s.put("dP", k, (dE - rest - s["dS"][0, ...] * P) / S0)
        dF = cauchy(xp, s["dP"], s["VX"], k, lo) + cauchy(xp, s["P"], s["dVX"], k, lo)
        if frozen is None:
            s.put("dX", k + 1, dF / (k + 1))
            continue
        s.put("dF", k, dF)
        if k < frozen and not given:
            s.put("dX", k + 1, dF / (k + 1))


def evaluate(coeffs: list[Any], h: Any) -> Any:
    """sum_k coeffs[k] h^k by Horner's rule."""
    acc = coeffs[-1]
    for c in coeffs[-2::-1]:
        acc = acc * h + c
    return acc
