"""The finish: from a shooting fit to a control or network that replays within tolerance.

The search (:mod:`verify.search.solver`) hands over a member of a shooting system
(:class:`verify.search.shooting.Shooting`) whose segments are within its search tolerance:
tolerance / 10 for networks, 1e-3 on the RK4 surrogate for controls.  What is returned must
replay within the tolerance, and so must a replay by other code.

* :func:`finish_network` (finite depth): the segments are chained into one network and, if
  the chaining amplified the segment residuals past the tolerance, polished by Gauss-Newton.
  A network whose float64 replay cannot be trusted to the tolerance (its error plus twice its
  propagated rounding exceeds it: long networks often amplify rounding a millionfold) is
  refined at ``HIGH_DPS`` digits or more (:func:`high_digits`, from that amplification), its
  segments first (:func:`refine_segments_in_precision`), then the whole network
  (:func:`refine_in_precision`), and returned with those digits.
* :func:`finish_control` (continuous depth): a fit of the RK4 surrogate is refitted on RK4
  steps of half, a quarter and an eighth the size (Levenberg-Marquardt on that one member to
  1e-8: plain steps, and the search's accelerated ones if those stall,
  ``REFIT_ACCELERATIONS``), then takes chord steps on the exact flows of the segments (Taylor
  residuals and Jacobians, the segments' flows in lock step, :func:`verify.model.flow_batch.flow_batch`)
  and, after chaining, on the whole control (the exact Jacobian of its flow).  The control is
  then replayed at ``FLOW_DPS`` digits: unless its error there plus twice the drift of its
  float64 replay from that one is within tolerance (long controls amplify rounding as long
  networks do), it is refined at ``FLOW_DPS`` digits (more if the drift asks for them) with
  the same chord and returned with those digits.  Where the chaining amplified the segment
  residuals beyond what float64 chord steps can remove (``gain``, chained residual over
  segment residual, times float64 rounding above tolerance / 10), or the float64 chord
  stalled above tolerance, the segments are refined first at :func:`high_digits` of that
  gain, as in finite depth, then the chained control at the same digits; a chained control
  within ``NEAR_CHAINED`` of the targets gets chord steps at those digits first, and its
  segments are refined only if they fail.

Each returns a :class:`Finished`: the steps with their error and digits, or the stage at which
the fit was lost (a key of ``LOSSES``), and the Jacobians it took.

>>> import numpy as np
>>> from verify.model.blocks import gaussian_blocks
>>> from verify.search.shooting import Shooting
>>> blocks = gaussian_blocks(0, 2)
>>> X = np.random.default_rng(1).normal(size=(1, 2, 2))
>>> h = np.random.default_rng(2).uniform(-0.5, 0.5, 8)
>>> from verify.model.network import apply
>>> Y = apply(blocks, [(k % 2, t) for k, t in enumerate(h)], X).end
>>> shoot = Shooting(blocks, X, Y, segments=1, steps=8)
>>> out = finish_network(shoot, h + 1e-12, 1e-10)
>>> len(out.steps), out.error <= 1e-10, out.dps, out.lost
(8, True, None, None)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from verify.io.errors import IntegrationError
from verify.model.backend import UNIT, precision
from verify.model.dynamics import CONTINUOUS, FINITE, Dynamics
from verify.model.flow_batch import flow_batch
from verify.model.network import apply, propagated_rounding
from verify.search.newton import chord, chord_in_precision, levenberg_marquardt
from verify.search.population import population_lm
from verify.search.shooting import Shooting
from verify.search.steps import merge

# Jacobians per refit of the RK4 surrogate on halved steps (measured: docs/solver-reach.md).
REFINE_JACOBIANS = 150
# Refits take plain Levenberg-Marquardt steps first, accelerated ones only if those stall (measured: same).
REFIT_ACCELERATIONS = (0.0,)
# A refit that has not halved its residual over this many Jacobians is given up (measured: same).
REFIT_PATIENCE = 15

# Chord steps use the exact flow Jacobians; within this float64 residual a chained control gets chord
# steps at high precision at once (a choice well short of where they overshoot; measured: same).
NEAR_CHAINED = 1e-6

# Digits for networks and controls too unstable for float64, at least.  Most found networks
# propagate at most about 1e12 units of rounding (a float64 replay 7e-4 off), which is 1e-18 at
# 30 digits; some chain into far more (2e22 units at m = 32), and then
# :func:`high_digits` adds digits, up to MAX_DPS (beyond it the network is not returned).
HIGH_DPS = 30
MAX_DPS = 100

# Continuous controls start lower: a flow's cost grows with its digits (its Taylor order, and the
# orders a split series keeps in precision), and :func:`high_digits` still adds what the gain
# asks for.  A 180-step control at m = 18 flows in 3.4 s at 23 digits and 7.5 s at 30.
FLOW_DPS = 24

# What float64 steps on a network or a segment's flow reliably bring a residual to, relative to
# the data's scale (max(1, max |x|)): finite searches aimed at 1e-21 bottomed out at 1.3e-15 to
# 5.8e-15 (an m = 8 instance, three runs).  Below it (a tolerance under 1e-11) the search and
# the segments stop there and the rest is done at high precision, which a float64 fit aimed
# further would never hand over to.
FLOAT64_REACH = 1e-12


def float64_reach(X: np.ndarray, Y: np.ndarray) -> float:
    """FLOAT64_REACH at the scale of the data."""
    return FLOAT64_REACH * max(1.0, float(np.abs(X).max()), float(np.abs(Y).max()))


# Where a fit that reached the search tolerance can be lost on its way to a witness (the keys of
# ``Solution.lost``; where the misses fell: docs/solver-reach.md).
LOSSES = {
    "refit": "at the refit on finer RK4 steps (the surrogate's fit did not carry over to them)",
    "segments": "at the exact flows of the segments",
    "precision": f"needing more than {MAX_DPS} digits",
    "chord": "at the chord steps on the whole control or network",
    "integration": "integrating a flow (overflow or the Taylor-step cap)",
    "deadline": "at the time budget",
}


@dataclass(frozen=True, kw_only=True)
class Finished:
    """What a finish made of a fit.  ``steps``: the control or network (float64 numbers, or
    mpmath numbers at ``dps`` digits), ``error`` its max |image - target| there; or, when the
    fit was lost, ``lost``: the stage (a key of ``LOSSES``) and no steps.  ``jacobians``: those
    the finish took."""

    steps: list[tuple[int, Any]] = field(default_factory=list)
    error: float = math.inf
    dps: int | None = None
    lost: str | None = None
    jacobians: int = 0


def amplification(rounding: float) -> float:
    """How many float64 units of rounding a replay propagates (at least 1), from the estimate
    ``rounding`` of its rounding (:func:`verify.model.network.propagated_rounding`, or a float64
    replay's drift from an exact one)."""
    return max(rounding / UNIT, 1.0)


def high_digits(gain: float, tol: float, floor: int = HIGH_DPS) -> int | None:
    """Digits at which a replay that amplifies its rounding ``gain``-fold stays 1e-3 * tol
    from the exact image, with 4 digits to spare for the residuals driven below that (at
    least ``floor``); None when that is more than MAX_DPS digits or the gain overflowed (the
    replay is not refined, and its control not returned).

    >>> high_digits(1e6, 1e-10), high_digits(2e22, 1e-10), high_digits(1e97, 1e-10), high_digits(math.inf, 1e-10)
    (30, 40, None, None)
    >>> high_digits(1e6, 1e-10, FLOW_DPS), high_digits(1e11, 1e-10, FLOW_DPS)
    (24, 28)
    """
    if not math.isfinite(gain):
        return None
    dps = max(floor, math.ceil(math.log10(gain) - math.log10(1e-3 * tol)) + 4)  # the quotient can overflow
    return dps if dps <= MAX_DPS else None


def float_replay_check(blocks, control, X, Y, deadline: float = math.inf) -> tuple[np.ndarray, float, float]:
    """The residual (flattened, rounded to float64) of a float64 control at ``FLOW_DPS`` digits,
    the drift of its float64 replay from that image, and the float64 replay's own error
    max |image - Y|.  The control is returned as float64 when max |residual| + 2 drift is within
    tolerance: another float64 replay, twice as far from the exact flow, still passes."""
    exact = CONTINUOUS.exact_image(blocks, control, X, FLOW_DPS, deadline)
    residual, end = (exact - Y).ravel().astype(float), CONTINUOUS.image(blocks, control, X)
    if end is None:
        return residual, math.inf, math.inf
    return residual, float(np.abs((exact - end).astype(float)).max()), float(np.abs(end - Y).max())


def refine_in_precision(blocks, pattern, h, X, Y, tol: float, dps: int, deadline: float = math.inf,
                        max_iter: int = 8, dyn: Dynamics = FINITE, jacobian=None, r=None) -> tuple[list, float, int]:
    """:func:`chord` on a network or control whose float64 replay is too unstable for the
    tolerance: the residual at ``dps`` digits (steps kept at ``dps`` digits; its float64
    rounding is accurate to 16 digits of itself), the step from a float64 Jacobian of the step
    sizes or durations (by default the layer derivatives, or the flow's duration sensitivities;
    ``jacobian`` replaces it, e.g. by one the caller caches; ``r``, if the caller has it, is the
    residual at h at ``dps`` digits, which is then not computed again).  Returns the steps (as
    mpmath numbers), the last max |r| and the Jacobians used."""
    def residual(z):
        return dyn.residual(blocks, pattern, z, X, Y, dps, deadline)

    def float_jacobian(z):
        return jacobian(z.astype(float)) if jacobian else dyn.jacobian(blocks, pattern, z, X, deadline)

    hm, err, jacobians = chord_in_precision(residual, float_jacobian, h, tol, dps, deadline, max_iter, r)
    return [(b, t) for b, t in zip(pattern, hm, strict=True) if t != 0], err, jacobians


def refine_segments_in_precision(shoot: Shooting, x: np.ndarray, tol: float, dps: int, deadline: float = math.inf,
                                 max_iter: int = 8) -> tuple[np.ndarray, float, int]:
    """:func:`chord` on a shooting system (step sizes or durations, and intermediate states):
    each segment's residual at ``dps`` digits (its network, or for ``scheme="rk4"`` the exact
    flow of its control, all segments in lock step by :func:`verify.model.flow_batch.flow_batch`: at m = 18
    the residual of 30 segments took 4.1 s and 3.7 s instead of 5.5 s and 4.7 s one at a
    time), the step from the float64 shooting Jacobian (its block elimination,
    :meth:`Shooting.pseudo_inverse`).  A chained network or control
    multiplies the segment residuals by the Jacobians of the segments after them (1e8 and more
    in long networks), so a float64 fit within 1e-12 can chain into a network 1e-4 off; with
    segment residuals at 1e-25 it cannot.
    Returns the member (as mpmath numbers), its last max |r| and the Jacobians used."""
    S, L, pattern = shoot.segments, shoot.steps, shoot.pattern()
    flows = shoot.scheme == "rk4"  # a surrogate of the flows, whose exact segments are flows

    def residual(z):
        H, W = z[: S * L].reshape(S, L), z[S * L:].reshape((S - 1,) + shoot.X.shape)
        starts, ends = [shoot.X, *W], [*W, shoot.Y]
        if flows:  # the segments' flows in lock step
            images = flow_batch(shoot.blocks, pattern, H, np.stack(starts), dps=dps, deadline=deadline).end
        else:
            images = [FINITE.exact_image(shoot.blocks, list(zip(pattern, H[s], strict=True)), starts[s], dps)
                      for s in range(S)]
        return np.concatenate([(images[s] - ends[s]).ravel() for s in range(S)]).astype(float)

    return chord_in_precision(residual, lambda z: shoot.pseudo_inverse(z, exact_flow=flows), x, tol, dps, deadline,
                              max_iter)


def chained(shoot: Shooting, x: np.ndarray) -> tuple[list[int], np.ndarray]:
    """The pattern and step sizes or durations of the segments of member x, one after the other
    (float64 or mpmath numbers, as x holds them)."""
    return shoot.pattern() * shoot.segments, x[: shoot.segments * shoot.steps].copy()


def _whole(shoot: Shooting, x: np.ndarray, reverse: bool) -> tuple[list[int], np.ndarray]:
    """The segments of member x chained into one control, reversed for the inverse problem
    (Y to X reversed is X to Y), consecutive steps of a block merged."""
    pattern, h = chained(shoot, x)
    if reverse:
        pattern, h = pattern[::-1], -h[::-1]
    steps = merge(list(zip(pattern, h, strict=True)), 0.0)
    return [b for b, _ in steps], np.array([t for _, t in steps])


def finish_network(shoot: Shooting, x: np.ndarray, tol: float, deadline: float = math.inf) -> Finished:
    """The segments of member x chained into one network; when the chaining amplified the
    segment residuals past tolerance / 10, Gauss-Newton on the whole network (exact Jacobians),
    so that a replay by other code has room.  A network is kept only if its error plus twice
    the rounding its layers propagate (:func:`verify.model.network.propagated_rounding`: ours and
    another replay each within one estimate of the exact image) is within tolerance; otherwise
    it is refined at :func:`high_digits` digits, its segments first."""
    spent = [0]
    try:
        out = _network(shoot, x, tol, deadline, spent)
    except IntegrationError:
        out = Finished(lost="integration")
    return replace(out, jacobians=spent[0])


def _network(shoot: Shooting, x: np.ndarray, tol: float, deadline: float, spent: list[int]) -> Finished:
    blocks, X, Y = shoot.blocks, shoot.X, shoot.Y
    pattern, h = chained(shoot, x)

    def layers(h):
        return [(b, float(t)) for b, t in zip(pattern, h, strict=True) if t != 0]  # a zero layer is the identity

    net = layers(h)
    rounding = propagated_rounding(blocks, net, X)
    if 2 * rounding <= tol:  # else no float64 network can pass, and the float64 polish would be wasted
        err = FINITE.error(blocks, net, X, Y)
        if err > 0.1 * tol:
            def fit(z):
                res = apply(blocks, list(zip(pattern, z, strict=True)), X, sensitivities=True)
                return res.end.ravel() - Y.ravel(), res.d_steps

            with np.errstate(all="ignore"):  # overflowing trial steps are rejected, not reported
                h, info = levenberg_marquardt(fit, h, tol=0.1 * tol, max_iter=30, deadline=deadline,
                                              gauss_newton_first=True,
                                              residual_only=lambda z: FINITE.residual(blocks, pattern, z, X, Y))
            spent[0] += info["jacobians"]
            net = layers(h)
            err, rounding = FINITE.error(blocks, net, X, Y), propagated_rounding(blocks, net, X)
        if err + 2 * rounding <= tol:  # another replay: at most 2 estimates away
            return Finished(steps=net, error=err)
    # Too unstable for float64: the segments first (each short, so its float64 Jacobian is
    # good), at enough digits and far below what the chaining amplifies, then the whole network.
    gain = amplification(rounding)
    dps = high_digits(gain, tol)
    if dps is None:
        return Finished(lost="precision")
    xm, _, jac = refine_segments_in_precision(shoot, x, 1e-3 * tol / gain, dps, deadline)
    spent[0] += jac
    net, err, jac = refine_in_precision(blocks, pattern, xm[: len(pattern)], X, Y, 0.1 * tol, dps, deadline)
    spent[0] += jac
    if err + 2 * propagated_rounding(blocks, [(b, float(t)) for b, t in net], X, 10.0**-dps) > tol:
        return Finished(lost="chord")
    return Finished(steps=net, error=err, dps=dps)


def finish_control(shoot: Shooting, x: np.ndarray, tol: float, reverse: bool = False, acceleration: float = 0.75,
                   deadline: float = math.inf) -> Finished:
    """Member x of an RK4 surrogate (``shoot.scheme == "rk4"``), solved to 1e-3, finished as
    a control: Levenberg-Marquardt on this member (plain steps, then accelerated ones with
    ``acceleration`` if they stall) on RK4 steps of half, a quarter and an eighth the size to
    1e-8; chord steps on the exact flows of the segments (Taylor residuals and exact
    Jacobians); chaining (flows compose exactly; with ``reverse``, x is a fit of the inverse
    problem, ``shoot`` running from the targets to the inputs, and its control is reversed,
    durations negated: the inverse flow); chord steps on the whole control when the chaining
    amplified the residual past tolerance / 10, in float64 and, if that stalls above the
    tolerance or the replay is too unstable, at FLOW_DPS digits or more (after the segments at
    those digits, where float64 cannot remove what the chaining amplified)."""
    spent = [0]
    try:
        out = _control(shoot, x, tol, reverse, acceleration, deadline, spent)
    except IntegrationError:
        out = Finished(lost="integration")
    return replace(out, jacobians=spent[0])


def _control(shoot: Shooting, x: np.ndarray, tol: float, reverse: bool, acceleration: float, deadline: float,
             spent: list[int]) -> Finished:
    X, Y = (shoot.Y, shoot.X) if reverse else (shoot.X, shoot.Y)
    x = _refit(shoot, x, acceleration, deadline, spent)
    if isinstance(x, Finished):
        return x
    reach = float64_reach(X, Y)
    x, seg_err, jac = chord(lambda z: shoot.system(z[None], exact_flow=True)[0][0],
                             lambda z: shoot.pseudo_inverse(z, exact_flow=True), x, max(0.01 * tol, 0.1 * reach), deadline)
    spent[0] += jac
    if seg_err > max(0.1 * tol, reach):  # below float64's reach the segments are refined in precision
        return Finished(lost="segments")
    return _chained_control(shoot, x, seg_err, X, Y, tol, reverse, deadline, spent)


def _refit(shoot: Shooting, x: np.ndarray, acceleration: float, deadline: float, spent: list[int]) -> np.ndarray | Finished:
    """Member x refitted on RK4 steps of half, a quarter and an eighth the size (the RK4 error
    falls about tenfold each time), or where it was lost."""
    fine = shoot
    for _ in range(3):
        fine = replace(shoot, substeps=2 * fine.substeps)
        for a in dict.fromkeys(REFIT_ACCELERATIONS + (acceleration,)):
            refit = population_lm([fine], size=1, start=lambda _k, _i, x=x: x.copy(), tol=1e-8,
                                  max_iter=REFINE_JACOBIANS, max_starts=1, deadline=deadline, acceleration=a,
                                  patience=REFIT_PATIENCE)
            spent[0] += refit.jacobians
            if refit.found is not None or refit.timed_out:
                break
        if refit.found is None:  # a refit that stopped short of the deadline was lost to it
            return Finished(lost="deadline" if refit.timed_out else "refit")
        x = refit.found
    return x


def _chained_control(shoot: Shooting, x: np.ndarray, seg_err: float, X: np.ndarray, Y: np.ndarray, tol: float,
                     reverse: bool, deadline: float, spent: list[int]) -> Finished:
    """The segments of member x (within ``seg_err`` on the exact flows) chained into one
    control from X to Y and polished (:func:`finish_control`, from the chaining on)."""
    blocks = shoot.blocks
    last: list = [None, None]  # the durations and the exact Jacobian last computed: a stalled float64
    # chord leaves the durations where they were, and the chord at high precision starts there

    def jacobian(z):
        z = np.asarray(z, dtype=float)
        if last[0] is None or not np.array_equal(last[0], z):
            last[:] = z, CONTINUOUS.jacobian(blocks, pattern, z, X, deadline)
        return last[1]

    pattern, h = _whole(shoot, x, reverse)
    r0 = CONTINUOUS.residual(blocks, pattern, h, X, Y)
    gain = max(float(np.abs(r0).max()) / max(seg_err, 1e-300), 1.0)  # what the chaining amplified
    err = math.inf
    if UNIT * gain <= 0.1 * tol:  # else float64 chord steps cannot reach the tolerance
        h, err, jac = chord(lambda z: CONTINUOUS.residual(blocks, pattern, z, X, Y), jacobian, h, 0.1 * tol,
                             deadline, r=r0)
        spent[0] += jac
    control, exact_residual, dps = list(zip(pattern, map(float, h), strict=True)), None, FLOW_DPS
    if err <= tol:
        exact_residual, drift, _ = float_replay_check(blocks, control, X, Y, deadline)
        if float(np.abs(exact_residual).max()) + 2 * drift <= tol:
            return Finished(steps=control, error=err)
        dps = high_digits(amplification(drift), tol, FLOW_DPS)
        if dps is None:
            return Finished(lost="precision")
    else:
        # Chord steps on the whole control from far off overshoot (docs/solver-reach.md): unless it is
        # near (NEAR_CHAINED), the segments first, at enough digits, then the chained control.
        dps = high_digits(gain, tol, FLOW_DPS)
        if dps is None:
            return Finished(lost="precision")
        if min(err, float(np.abs(r0).max())) <= NEAR_CHAINED:
            control, err, jac = refine_in_precision(blocks, pattern, h, X, Y, 0.1 * tol, dps, deadline,
                                                    dyn=CONTINUOUS, jacobian=jacobian)
            spent[0] += jac
            if err <= tol:
                return Finished(steps=control, error=err, dps=dps)
        x, _, jac = refine_segments_in_precision(shoot, x, 1e-3 * tol / gain, dps, deadline)
        spent[0] += jac
        with precision(dps):
            pattern, h = _whole(shoot, x, reverse)
    # The float64 replay is too unstable for the tolerance, or the chord stalled above it:
    # chord steps on the flow at enough digits (FLOW_DPS at least), with the same exact Jacobians.
    control, err, jac = refine_in_precision(blocks, pattern, h, X, Y, 0.1 * tol, dps, deadline, dyn=CONTINUOUS,
                                            jacobian=jacobian, r=exact_residual if dps == FLOW_DPS else None)
    spent[0] += jac
    return Finished(steps=control, error=err, dps=dps) if err <= tol else Finished(lost="chord")
