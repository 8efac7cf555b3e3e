"""Rigorous enclosures of a witness's image in Arb ball arithmetic (``verify check --certify``).

A ball array encloses the image of the inputs: every rounding of every operation is enclosed
(python-flint's ``arb``), and the inputs, block matrices and steps are the exact numbers the
witness writes (binary floats exactly, decimal strings in balls that contain them; the blocks'
entries and beta as :meth:`verify.model.blocks.Block.in_arb` holds them).

**Networks.** X_l = X_(l-1) + h_l F_(b_l)(X_(l-1)) evaluated directly on balls.

**Flows.** A validated Taylor method, one Taylor step [0, h] at a time, from the ball array X
enclosing the state:

1. *A-priori enclosure* (high-order enclosure; Corliss and Rihm 1996, Nedialkov, Jackson and
   Corliss 1999): a box B with

       sum_{k<=p} X_k(X) T^k + T^(p+1) X_(p+1)(B)  contained in  B,    T = [0, h],

   where X_k(Z) is the k-th Taylor coefficient of the trajectory through Z (the recurrences of
   :mod:`verify.model.taylor`, evaluated on balls, so enclosing it for every point of Z).  Then the
   solution from every point of X stays in B over [0, h].  B is sought by inflating the left
   side a few times; where none is found the step is halved.
2. *The remainder*: R = h^(p+1) X_(p+1)(B), the Lagrange remainder component by component
   (the (p+1)-th derivative of each coordinate at a point of [0, h] is (p+1)! times the
   (p+1)-th coefficient of the trajectory through the state there, which lies in B).  The
   interval coefficients of order p + 1 over B overestimate by about a factor 10 per order
   (measured), which is what limits the step.
3. *The step in mean-value form* (Lohner 1987, without his QR factors): with c the balls'
   midpoints and T(x) = sum_{k<=p} X_k(x) h^k the Taylor map,

       X(h) in T(c) + J (X - c) + R,    J = DT over the balls X,

   T(c) from the coefficients at the point c, J from their tangents (forward-mode, the
   recurrences of :mod:`verify.model.taylor` differentiated) evaluated on the balls.  Evaluating T
   on the balls directly wraps: its width grew about 1.5x per step (1e-30 to 1e-15 in 90
   steps), whereas here a width grows only as the flow's Jacobian and |J| stretch it.

Verdicts (:func:`verdict`): CERTIFIED when every ball of image - target lies within the
tolerance, FAIL when one lies wholly outside, UNDECIDED otherwise (with the width).

>>> import flint, numpy as np
>>> from verify.model.blocks import gaussian_blocks
>>> from verify.model.flow import flow
>>> blocks = gaussian_blocks(0, 2)
>>> X = np.random.default_rng(1).normal(size=(1, 2, 2))
>>> ball = enclose_flow(blocks, [(0, 0.5), (1, -0.3)], X)
>>> Y = flow(blocks, [(0, 0.5), (1, -0.3)], X, dps=40).end
>>> with precision(40):  # the 40-digit image lies in the balls, which are narrow
...     inside = all(b.contains(flint.arb(str(y))) for b, y in zip(ball.end.ravel(), Y.ravel()))
>>> inside, ball.width < 1e-15
(True, True)
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from verify.io.errors import IntegrationError
from verify.model.attention import basis_directions, columns_to_jacobians, field, jacobian
from verify.model.backend import namespace, precision, round_down, round_up, to_arb
from verify.model.blocks import Block
from verify.model.flow import lognorms, refuse, step_size
from verify.model.network import apply_in_namespace
from verify.model.taylor import coefficients, evaluate

ORDER = 14  # Taylor order of the validated steps (the a-priori box needs one more); 14 was fastest of 8-28
DIGITS = 30  # Arb's working precision: the widths come from wrapping, not from the digits
INFLATIONS = 6  # tries at an a-priori box before the step is halved
MAX_STEPS = 20_000  # validated Taylor steps over the whole control
REMAINDER_DIGITS = 10  # a step's remainder may add 10^(10 - digits) max(1, |x|): well above the rounding
TOO_WIDE = "the balls are too wide"  # the one failure that more digits can cure
PROGRESS_SECONDS = 10.0  # between progress lines of a long enclosure
SHARE = 1e-3  # of the tolerance, for all the remainders together (before the flow amplifies them)


@dataclass(frozen=True)
class Enclosure:
    """``end``: object array of ``flint.arb`` balls enclosing the image (the inputs' shape);
    ``width``: the largest radius; ``steps``: validated Taylor steps (0 for networks);
    ``d_free``: with free durations, the balls of d image / d tau_j (shape (free, N, n, d))."""

    end: np.ndarray
    width: float
    steps: int
    d_free: np.ndarray | None = None


def _arb(v: Any) -> Any:
    import flint

    return flint.arb(float(v)) if isinstance(v, (float, int, np.floating)) else flint.arb(str(v))


def _radius(a: np.ndarray) -> float:
    return max((float(x.rad()) for x in a.ravel()), default=0.0)


def enclose_network(blocks: Sequence[Block], layers: Sequence[tuple[int, Any]], X: Any,
                    digits: int = DIGITS) -> Enclosure:
    """The network's image in balls (see the module docstring)."""
    with precision(digits):
        xp = namespace("arb")
        balls = [blk.in_arb() for blk in blocks]  # the entries as written, enclosed
        end = apply_in_namespace(balls, [(b, _arb(h)) for b, h in layers], xp.asarray(X), False).end
        if not all(x.is_finite() for x in end.ravel()):
            raise IntegrationError(f"the network's image is not finite in ball arithmetic: {TOO_WIDE}, or its steps "
                                  "too large")
        return Enclosure(end=end, width=_radius(end), steps=0)


def _inflate(B: np.ndarray) -> np.ndarray:
    """Each ball with twice its radius plus a little (relative 1e-12 of its midpoint, and 1e-30)."""
    import flint

    return np.vectorize(lambda b: flint.arb(b.mid(), 2 * b.rad() + 1e-12 * abs(b.mid()) + 1e-30), otypes=[object])(B)


def _inside(inner: np.ndarray, outer: np.ndarray) -> bool:
    return all(o.contains_interior(i) for i, o in zip(inner.ravel(), outer.ravel(), strict=True))


def _remainder(block: Block, Xk: list, h: Fraction, sign: int, eps: float,
               dXk: list | None = None) -> tuple[Any, Any, Fraction]:
    """The Lagrange remainder of one validated Taylor step of length h (an exact rational: the
    steps must add up to the duration exactly) from the balls X whose Taylor coefficients (in
    balls) are ``Xk``: (the remainder's balls, the tangents' remainder, h), or (None, None, a
    shorter h to try) where no a-priori box was found or the remainder, evaluated over the box
    (interval Taylor coefficients of order p + 1 overestimate badly), exceeds ``eps``.

    With the tangent coefficients ``dXk`` in the unit directions, also the remainder of the
    variational equation W' = DF(x) W, W(0) = I, from an a-priori box B_W for W found the same
    way given B (the pair of boxes is one for the system (x, W)); otherwise that item is None."""
    import flint

    up = float(np.nextafter(float(h), np.inf))
    T = flint.arb(sign * up / 2, up / 2)  # covers [0, h] with the step's sign
    t = _signed(h, sign)
    B = _inflate(evaluate(Xk, T))
    for _ in range(INFLATIONS):
        top = coefficients(block, B, ORDER + 1)[0][ORDER + 1]
        candidate = evaluate(Xk, T) + T ** (ORDER + 1) * top
        if not all(c.is_finite() for c in candidate.ravel()):
            break
        if _inside(candidate, B):
            remainder = t ** (ORDER + 1) * top
            worst = max(float(abs(r).upper()) for r in remainder.ravel())
            if worst > eps:  # the remainder's h^(p+1) falls fast: shrink to meet eps, at least halving
                return None, None, _shorter(h, min(0.5, max(1 / 16, 0.9 * (eps / worst) ** (1 / (ORDER + 1)))))
            if dXk is None:
                return remainder, None, h
            BW = _inflate(evaluate(dXk, T))
            for _ in range(INFLATIONS):
                topW = coefficients(block, B, ORDER + 1, U=BW)[1][ORDER + 1]
                candidate = evaluate(dXk, T) + T ** (ORDER + 1) * topW
                if not all(c.is_finite() for c in candidate.ravel()):
                    break
                if _inside(candidate, BW):
                    return remainder, t ** (ORDER + 1) * topW, h
                BW = _inflate(candidate)
            break
        B = _inflate(candidate)
    return None, None, _shorter(h, 0.5)


def _signed(h: Fraction, sign: int) -> Any:
    """sign * h as a ball holding it exactly (h is a binary float; a ball where it is not)."""
    import flint

    return sign * flint.arb(h.numerator) / h.denominator


def _shorter(h: Fraction, factor: float) -> Fraction:
    """A binary float below h, about factor h."""
    return Fraction(float(h) * factor)


def _centre(X: np.ndarray) -> np.ndarray:
    """The balls' midpoints as exact balls."""
    import flint

    return np.vectorize(lambda z: flint.arb(z.mid()), otypes=[object])(X)


def enclose_flow(blocks: Sequence[Block], control: Sequence[tuple[int, Any]], X: Any, digits: int = DIGITS,
                 max_steps: int = MAX_STEPS, deadline: float = math.inf, tolerance: float | None = None,
                 share: float = SHARE, free: Sequence[int] = (), radius: float = 0.0,
                 progress: Callable[[str], None] | None = None) -> Enclosure:
    """The flow's image in balls (see the module docstring).  Durations that are not binary
    floats (decimal strings) are integrated to the float nearest them and the rest, a ball of
    at most a unit of the working precision, is covered by one more validated step over it.

    Each step's remainder may add 10^(10 - digits) max(1, |x|) or, with ``tolerance`` (the
    width the enclosure is for), the larger share tolerance h / (total duration): the
    remainders together take ``share`` of the tolerance before the flow amplifies them (the
    mean-value form carries them with the flow's true Jacobians); the remainder falls like
    h^15, so a thousandfold smaller share costs 1.6x more steps.

    With ``free`` step indices and a ``radius`` r, every free duration may lie anywhere within
    r of the one written (each is integrated as written, then continued over [-r, r]), the
    balls enclose the image for every such choice, and ``d_free`` encloses the derivative of
    the image with respect to the free durations there: V_j = W_(K<-j) F_(b_j)(x_j), carried
    step by step as V <- W V with W the flow's Jacobian over the balls (the tangents' Taylor
    map and its remainder), plus F_(b_j)(x_j) in column j at the end of step j.

    ``progress`` hears of the validated steps every PROGRESS_SECONDS.

    One piece: the balls, the free columns and the step sizes advance together, step by step."""
    import flint

    started = told = time.perf_counter()

    count = 0
    total = sum(abs(float(_arb(t).mid())) for _, t in control) or 1.0
    rate = 0.0 if tolerance is None else share * tolerance / total  # remainder allowed per unit of duration
    column = {int(k): j for j, k in enumerate(free)}
    with precision(digits):
        xp = namespace("arb")
        balls = [blk.in_arb() for blk in blocks]  # the entries as written, enclosed; blocks guide the steps
        Xb = xp.asarray(X)
        N, n, d = Xb.shape
        U = basis_directions(xp, n, d)
        V = xp.zeros((len(column), N, n * d, 1)) if column else None
        for k, (b, tau) in enumerate(control):
            exact = _arb(tau)
            f = float(exact.mid())
            sign = 1 if f >= 0 else -1
            left = Fraction(abs(f))  # exact: the steps add up to the duration without rounding
            last = math.inf  # the last step taken: the next tries at most a quarter longer
            while left > 0:
                c = _centre(Xb)
                mid = np.vectorize(float, otypes=[float])(c)
                logs = lognorms(coefficients(blocks[b], mid, ORDER)[0])
                rule = float(step_size(logs, ORDER, math.log(1e-18) + max(0.0, logs[0])))
                h = min(left, Fraction(min(1.25 * last, rule)))
                floor = 10.0 ** (REMAINDER_DIGITS - digits) * max(1.0, float(np.max(np.abs(mid))))
                Xk, dXk = coefficients(balls[b], Xb, ORDER, U=U)  # over the balls, once for every h tried
                while True:
                    remainder, tangent_rest, h = _remainder(balls[b], Xk, h, sign, max(floor, rate * float(h)),
                                                            dXk if column else None)
                    if remainder is not None:
                        break
                    if h < 1e-12 * max(1.0, abs(f)):
                        raise IntegrationError(f"no a-priori enclosure for a step of block {b} (duration {f:g}) "
                                               f"after {count} validated steps; {TOO_WIDE}")
                t = _signed(h, sign)
                J = columns_to_jacobians(xp, evaluate(dXk, t))  # D T over the balls, per sequence (N, nd, nd)
                spread = xp.matmul(J, xp.reshape(Xb - c, (N, n * d, 1)))
                Xb = evaluate(coefficients(balls[b], c, ORDER)[0], t) + remainder + xp.reshape(spread, (N, n, d))
                if column:  # the flow's Jacobian: the Taylor map's plus the variational remainder
                    V = xp.matmul(J + columns_to_jacobians(xp, tangent_rest), V)
                left, count, last = left - h, count + 1, float(h)
                if progress and time.perf_counter() - told > PROGRESS_SECONDS:
                    told = time.perf_counter()
                    progress(f"certify: {count} validated Taylor steps, control step {k + 1} of {len(control)}, "
                             f"{told - started:.0f} s")
                refuse(float(np.max(np.abs(mid))), count, float(left) / rule, max_steps, deadline,
                       f"at control step {k + 1} of {len(control)} after {count} validated Taylor steps")
            rest = exact - flint.arb(f)  # a decimal duration's distance from its float (a ball)
            if k in column:
                rest = rest + flint.arb(0, radius)
            if not rest.is_zero():
                Xb, growth = _continue(balls[b], Xb, rest)
                if column:  # W in I + growth [-1, 1]: |(W - I) V| <= growth sum |V| per sequence
                    size = np.vectorize(abs, otypes=[object])(V).sum(axis=2, keepdims=True)
                    V = V + np.vectorize(lambda a, g=growth: flint.arb(0, (g * a).upper()), otypes=[object])(size)
            if k in column:
                V[column[k]] = V[column[k]] + xp.reshape(field(balls[b], Xb), (N, n * d, 1))
        d_free = None if V is None else xp.reshape(V, (len(column), N, n, d))
        return Enclosure(end=Xb, width=_radius(Xb), steps=count, d_free=d_free)


def _continue(block: Block, X: np.ndarray, rest: Any) -> tuple[np.ndarray, Any]:
    """X moved by a short duration known only as a ball ``rest``: the first-order enclosure
    X + rest F(B) with B an a-priori box for |t| <= |rest|; and g >= e^(L |rest|) - 1 (an exact
    ball), L the largest row sum of |DF| over B, which bounds every entry of W - I for the
    flow's Jacobian W over that time (Gronwall)."""
    import flint

    span = round_up(abs(rest).upper())  # rounded up: the box must cover every |t| <= |rest|
    T = flint.arb(0, span)
    B = _inflate(X)
    for _ in range(INFLATIONS):
        F = coefficients(block, B, 1)[0][1]  # the field over the box
        candidate = X + T * F
        if _inside(candidate, B):
            rows = np.vectorize(abs, otypes=[object])(jacobian(block, B)).sum(axis=2)
            L = max((r.upper() for r in rows.ravel()), default=flint.arb(0).upper())
            return X + rest * F, flint.arb(((flint.arb(L) * span).exp() - 1).upper())
        B = _inflate(candidate)
    raise IntegrationError(f"no enclosure for the part of a duration that is not a binary float; {TOO_WIDE}")


def verdict(enclosure: Enclosure, targets: Any, tolerance: Any, digits: int = DIGITS) -> dict[str, Any]:
    """CERTIFIED, FAIL or UNDECIDED for max |image - target| <= tolerance (module docstring),
    the targets and the tolerance taken exactly as written (decimal strings in balls that hold
    them); with ``error_upper`` (a rigorous upper bound of max |image - target|) and ``width``."""
    with precision(digits):
        T = namespace("arb").asarray(targets)
        tol = to_arb(tolerance)
        gaps = [abs(e - t) for e, t in zip(enclosure.end.ravel(), T.ravel(), strict=True)]
        upper = max(round_up(g.upper()) for g in gaps)  # rounded up: a float never understates the bound
        lower = max(max(0.0, round_down(g.lower())) for g in gaps)
        inside = all(g <= tol for g in gaps)  # Arb's comparisons hold for every point of the balls
        outside = any(g > tol for g in gaps)
    word = "CERTIFIED" if inside else "FAIL" if outside else "UNDECIDED"
    return {"verdict": word, "certified": word == "CERTIFIED", "error_upper": upper, "error_lower": lower,
            "width": enclosure.width,
            "gap_width": max(float(g.rad()) for g in gaps), "validated_steps": enclosure.steps}
