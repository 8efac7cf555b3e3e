"""Constructive interpolation: a control (or network) mapping the inputs onto the targets.

One method, after :func:`verify.lie.admissibility.check_admissible` has refused targets that an
invariant forbids: multiple shooting (:mod:`verify.search.shooting`): ``steps_per_dim * m`` steps of
  the alternating pattern cut into ``segments`` segments (by default as many as give about
  ``segment_steps`` steps each) whose intermediate states are unknowns too (the defaults
  depend on the depth: ``DEPTH_DEFAULTS`` of :mod:`verify.search.settings`, filled in by its
  ``resolve``),
  fitted by a ``population`` of Levenberg-Marquardt starts in lock step (minimum-norm
  steps; step sizes uniform in [-scale, scale] from ``default_rng([seed, start])``, and the
  intermediate states on the straight path from X to Y, ``states="path"``; with
  ``states="mixed"``, the default in both depths, every other start instead has step sizes in
  [-image_scale, image_scale] and the images of its segments as states, ``"images"``); a start
  that has used ``max_iter`` Jacobians (or, with ``patience``, stopped halving its residual) is
  replaced by the next one, until ``max_starts`` or ``time_budget`` runs out.
  Finite depth fits the layers themselves (exact Jacobians) and hands the first start within
  tolerance / 10 to :func:`verify.search.finish.finish_network`; continuous depth fits an RK4
  surrogate of the flows (:mod:`verify.model.rk4`, ``substeps`` RK4 steps per control step) to 1e-3
  and hands it to :func:`verify.search.finish.finish_control` (refits on finer RK4 steps, chord steps
  on the exact flows).  A network or control whose float64 replay cannot be trusted to the
  tolerance is refined at high precision there and returned with ``Solution.dps`` set: its
  witness says, e.g., ``"precision": "30 digits"`` and replays there.
  In continuous depth the default also fits the inverse problem, Y to X (``directions``;
  its starts keyed ``default_rng([seed, index, 1])``), one iteration of each population in
  turn: a flow is inverted exactly by its control reversed, with durations negated, so a
  control found for Y to X, reversed, takes X to Y (up to its residual, which the chord steps
  on the whole control then remove).  The two problems differ: where targets spread apart
  tokens that the inputs hold close, the fit that contracts them is often the easier one.
  Reversing a residual network does not invert it, so finite depth fits X to Y only.
  In finite depth, inputs with a pair of tokens (n = 2) slower than ``tight_speed``
  (:mod:`verify.search.shape_speed`) are first expanded (:func:`_expanded_solve`,
  :mod:`verify.search.pair_expansion`): a short network parks the collection near centred states
  where one layer of a block (its step 13 to 4e8 in magnitude on the reach instances) gives
  the tight pair the length of its target's and leaves the other sequences nearly in place;
  the search then runs from that image (shares of the budget: ``EXPANSION_SHARES``), and if
  either stage fails, from X with the time left.  Networks that pull a tight pair apart are
  out of reach of the local fits (measured: with five or ten times the starts, or larger
  initial steps, they solved none of 12 such misses), since the pair moves by O(|delta|^2) per
  unit step.
  The search runs in ``phases``, one after the other, each with its share of the time budget
  (and of ``max_starts``) and its own ``scale``, ``image_scale``, ``states`` and ``substeps``:
  in continuous depth a third with short durations on the one-step surrogate, then long
  durations (``scale`` 2) on two RK4 steps per control step (``settings.CONTINUOUS_PHASES``); the
  phases after the first key their starts ``[seed, index, 0 or 1, phase]``.
  Every population step is corrected by geodesic acceleration (``acceleration``, see
  :func:`verify.search.population.population_lm`).  ``steps_per_dim=10, segments=1, population=1,
  max_starts=1, max_iter=300, acceleration=0, states="path", directions=("forward",)`` is the
  plain single-start Levenberg-Marquardt fit, the benchmark's baseline.
The wing held three other methods until issue 54: bracket steering, costate (Pontryagin)
shooting and a search through a hub; none solved an instance this one missed, and they were
removed (their measurements stay in docs/solver-reach.md, their code in git history).

Targets equal to the inputs get the empty control (or network) at once.  Consecutive steps of
one block are merged and zero steps dropped.  The returned
:class:`Solution` records the control, the replayed error, depth, total |duration|, seeds and
work, and the fits that reached the search tolerance but were lost in the finish, by stage
(``Solution.lost``, keys of ``LOSSES``; a "not found" message names them); :func:`verify.io.witness.make`
writes it out.

>>> import numpy as np
>>> from verify.model.blocks import gaussian_blocks
>>> rng = np.random.default_rng(3)
>>> X, Y = rng.normal(size=(1, 2, 1)), rng.normal(size=(1, 2, 1))
>>> Y.sort(axis=1); X.sort(axis=1)          # d = 1: the order of the tokens is invariant
>>> sol = solve(gaussian_blocks(3, 1), X, Y, Settings(depth="finite"))
>>> sol.success, sol.error <= 1e-10
(True, True)
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, replace

import numpy as np

from verify.io import validate
from verify.io.errors import InputError
from verify.lie.admissibility import check_admissible, check_blocks_move
from verify.model.blocks import Block
from verify.model.dynamics import FINITE
from verify.model.network import propagated_rounding
from verify.search.diagnosis import not_found
from verify.search.finish import (
    HIGH_DPS,
    MAX_DPS,
    Finished,
    amplification,
    finish_control,
    finish_network,
    float64_reach,
    high_digits,
)
from verify.search.newton import chord_in_precision
from verify.search.pair_expansion import expansion
from verify.search.population import PopulationRecord, population_lm
from verify.search.pruning import prune_found
from verify.search.settings import DEPTH_DEFAULTS, STATES, Settings, resolve, valid_phase
from verify.search.shape_speed import shape_speeds
from verify.search.shooting import Shooting
from verify.search.solution import Solution

MAX_SIZE = 1024  # N n d: the shooting matrices of a larger collection take gigabytes, and nothing past 128 was ever solved


def solve(
    blocks: Sequence[Block],
    X: np.ndarray,
    Y: np.ndarray,
    settings: Settings | None = None,
    progress: Callable[[str], None] | None = None,
) -> Solution:
    """Find a control (continuous) or network (finite) taking X to Y; see module docstring
    (``settings``: :class:`verify.search.settings.Settings`, its defaults when None)."""
    settings = Settings() if settings is None else settings
    if np.size(X) > MAX_SIZE:
        raise InputError(f"the collection has N n d = {np.size(X)} numbers; the solver's Jacobians have (N n d)^2 "
                         f"entries per segment, so it takes at most {MAX_SIZE} (its reach ends near 64: docs/solver-reach.md)")
    if not settings.prune >= 0:
        raise InputError(f"prune must be a number of seconds >= 0 (0: no pruning), got {settings.prune}")
    if not settings.time_budget > 0:  # NaN too: a deadline of NaN never comes
        raise InputError(f"the time budget must be a positive number of seconds (inf: none), got {settings.time_budget}")
    if not (math.isfinite(settings.tolerance) and settings.tolerance > 0):
        raise InputError(f"the tolerance must be a positive number, got {settings.tolerance}")
    if high_digits(1.0, settings.tolerance) is None:  # even a replay that amplifies no rounding
        raise InputError(f"a tolerance of {settings.tolerance:g} needs more than {MAX_DPS} digits; give one of at least "
                         f"{10.0 ** (high_digits(1.0, 1.0, 0) - MAX_DPS):g}")
    validate.seed(settings.seed, "the search seed")
    sol = _solve(blocks, X, Y, settings, progress)
    if sol.success and settings.prune > 0:
        return prune_found(blocks, X, Y, sol, settings, progress)
    return sol


def _solve(blocks, X, Y, settings: Settings, progress) -> Solution:
    if settings.depth not in DEPTH_DEFAULTS:
        raise InputError(f"unknown depth {settings.depth!r}; choose 'continuous' or 'finite'")
    if settings.states not in (*STATES, None):
        raise InputError(f"unknown start states {settings.states!r}; choose 'path', 'images' or 'mixed'")
    check_admissible(X, Y, bool(blocks[0].causal), settings.depth)
    check_blocks_move(blocks, X, Y)
    settings = resolve(settings)
    if np.array_equal(X, Y):  # the empty control (or network) is exact; a search would return a long one
        return Solution.of([], success=True, message="the targets equal the inputs: no steps needed", error=0.0, moves=0,
                           jacobians=0, wall_time=0.0, settings=asdict(settings))
    if not settings.directions or not set(settings.directions) <= {"forward", "backward"}:
        raise InputError(f"directions {settings.directions!r}: choose one or both of 'forward' and 'backward'")
    if not settings.phases or not all(map(valid_phase, settings.phases)):
        raise InputError(f"phases {settings.phases!r}: give each a positive 'share', optionally a positive 'scale' or "
                         "'image_scale', 'states' and whole 'substeps' from 1 to 1024")
    if "backward" in settings.directions and settings.depth == "finite":
        raise InputError("direction 'backward' needs continuous depth: reversing a residual network does not invert it")
    if settings.depth == "finite" and settings.tight_speed > 0 and X.shape[1] == 2 and not blocks[0].causal:
        speeds = shape_speeds(blocks, X)
        tight = [int(s) for s in np.argsort(speeds) if speeds[s] < settings.tight_speed]
        if tight:
            t0 = time.perf_counter()
            sol = _expanded_solve(blocks, X, Y, tight, settings, progress)
            if sol.success:
                return sol
            rest = _lm_solve(blocks, X, Y, replace(settings, time_budget=settings.time_budget - sol.wall_time), progress)
            return replace(rest, message=f"{rest.message}; {sol.message}", wall_time=time.perf_counter() - t0,
                           jacobians=rest.jacobians + sol.jacobians)
    return _lm_solve(blocks, X, Y, settings, progress)


# Finite depth, tight input pairs: the shares of the time budget for the parking fit and for the
# search from the expanded collection (the rest, and what they leave, goes to the search from X).
EXPANSION_SHARES = (0.25, 0.25)


def _expanded_solve(blocks, X, Y, tight: list[int], settings: Settings, progress) -> Solution:
    """Finite depth with tight input pairs (:mod:`verify.search.pair_expansion`): the parking network
    and the large layer, the image Z of X under them (at :func:`verify.search.finish.high_digits` of
    their rounding's gain, rounded to float64), the search from Z to Y, and the networks
    chained; unless the chained network replays in float64, the steps of the search's network
    are then corrected by Newton steps on the chained one at enough digits (residuals and
    Jacobian at those digits: Z is only the rounded image, and the large layer amplifies what
    separates it from the exact one).  A failure says where it stopped."""
    t0, tol = time.perf_counter(), settings.tolerance
    budget = settings.time_budget
    key = [settings.seed, 0, 2]  # the parking fit's generator (start keys have 2 entries or a third of 0 or 1)

    def failed(why: str, jacobians: int = 0) -> Solution:
        return Solution.of([], success=False, message=f"expanding the tight input pair(s) {tight}: {why}", error=math.inf,
                           moves=0, jacobians=jacobians, wall_time=time.perf_counter() - t0, settings=asdict(settings),
                           seeds=[key])

    pre = expansion(blocks, X, Y, tight, np.random.default_rng(key), t0 + EXPANSION_SHARES[0] * budget)
    if pre is None:
        return failed("no parking network found (verify.search.pair_expansion.park)")
    z_dps = high_digits(amplification(propagated_rounding(blocks, pre, X)), tol)
    if z_dps is None:
        return failed(f"the large layer (step {pre[-1][1]:.3g}) amplifies rounding past {MAX_DPS} digits")
    Z = FINITE.exact_image(blocks, pre, X, z_dps).astype(float)
    if progress:
        progress(f"expanded tight pair(s) {tight} by one layer of block {pre[-1][0]} (step {pre[-1][1]:.3g}); "
                 "searching from there")
    share = replace(settings, time_budget=max(0.0, t0 + sum(EXPANSION_SHARES) * budget - time.perf_counter()))
    sol = _lm_solve(blocks, Z, Y, share, progress)
    if not sol.success:
        return failed(f"the search from the expanded collection: {sol.message}", sol.jacobians)
    pattern, h = [b for b, _ in sol.steps], np.array([t for _, t in sol.steps], dtype=object)
    net = pre + [(b, float(t)) for b, t in sol.steps]
    rounding = propagated_rounding(blocks, net, X)
    err, dps = math.inf, None
    if sol.dps is None and 2 * rounding <= tol:
        err = FINITE.error(blocks, net, X, Y)
    if err + 2 * rounding <= tol:
        steps = net
    else:
        dps = high_digits(amplification(rounding), tol, max(HIGH_DPS, sol.dps or 0))
        if dps is None:
            return failed(f"the chained network needs more than {MAX_DPS} digits", sol.jacobians)

        whole_pattern = [b for b, _ in pre] + pattern  # the parking layers, then the search's

        def residual(z):
            return FINITE.residual(blocks, whole_pattern, [t for _, t in pre] + list(z), X, Y, dps)

        def jacobian(z):  # at dps digits too
            return FINITE.jacobian(blocks, whole_pattern, [t for _, t in pre] + list(z), X, dps=dps)[:, len(pre):]

        h, err, _ = chord_in_precision(residual, jacobian, h, 0.1 * tol, dps, t0 + budget, 8)
        if err > 0.1 * tol:  # stalled: the small singular values lost (chord, scaled)
            h, err, _ = chord_in_precision(residual, jacobian, h, 0.1 * tol, dps, t0 + budget, 8, scaled=True)
        steps = pre + [(b, t) for b, t in zip(pattern, h, strict=True)]
        if err + 2 * propagated_rounding(blocks, [(b, float(t)) for b, t in steps], X, 10.0**-dps) > tol:
            return failed(f"the chained network, corrected at {dps} digits, missed by {err:.2e}", sol.jacobians)
    b, step = pre[-1]
    msg = (f"reached the targets after expanding the tight input pair(s) {tight} by one layer of block {b} "
           f"(step {step:.3g}, after {len(pre) - 1} parking layers); from there, {sol.message}")
    return Solution.of(steps, success=True, message=msg, error=err, moves=sol.moves, jacobians=sol.jacobians,
                       wall_time=time.perf_counter() - t0, settings=asdict(settings), seeds=[key, *sol.seeds], dps=dps,
                       lost=sol.lost)


def start_key(seed: int, index: int, backward: bool = False, phase: int = 0) -> list[int]:
    """The generator key of start ``index``: ``[seed, index]``, ``[seed, index, 1]`` for the
    inverse problem, and ``[seed, index, 0 or 1, phase]`` in the phases after the first."""
    if phase:
        return [seed, index, int(backward), phase]
    return [seed, index, 1] if backward else [seed, index]


def start(shoot: Shooting, settings: Settings, index: int, backward: bool = False, phase: int = 0) -> np.ndarray:
    """Start ``index`` of the population fit (:meth:`Shooting.fresh` with ``default_rng`` of
    :func:`start_key`: ``[seed, index]``, or ``[seed, index, 1]`` for the inverse problem):
    ``settings.states`` and ``settings.scale``, except that with ``states="mixed"``
    the odd starts are ``"images"`` with step sizes in [-image_scale, image_scale].  Straight-path
    states can lead every start of a fit into the same region (seen at m = 8: all of them
    stalled at one residual, their states shrunk to near the origin, where attention is nearly
    uniform and the differences of tokens barely move); the images of large random steps
    start elsewhere."""
    rng = np.random.default_rng(start_key(settings.seed, index, backward, phase))
    if settings.states == "mixed":
        return shoot.fresh(rng, settings.image_scale, "images") if index % 2 else shoot.fresh(rng, settings.scale, "path")
    return shoot.fresh(rng, settings.scale, settings.states)


def _lm_solve(blocks, X, Y, settings: Settings, progress) -> Solution:
    t0 = time.perf_counter()
    deadline = t0 + settings.time_budget
    finite = settings.depth == "finite"
    total = max(1, min(round(settings.steps_per_dim * X.size), settings.max_depth))
    S = settings.segments if settings.segments is not None else math.ceil(total / settings.segment_steps)
    S = max(1, min(S, total))
    shoot = Shooting(blocks, X, Y, S, total // S, 1, "euler" if finite else "rk4")
    backward = [d == "backward" for d in settings.directions]
    tol = settings.tolerance
    # a member this close is handed to the finish (finite: at high precision below float64's reach)
    search_tol = max(0.1 * tol, float64_reach(X, Y)) if finite else 1e-3
    extra_jacobians = [0]  # those of the finishes
    reversed_control = [False]
    lost: Counter[str] = Counter()  # fits that reached the search tolerance and were lost, by stage (LOSSES)

    def finish(sh, k, x):
        out = (finish_network(sh, x, tol, deadline) if finite
               else finish_control(sh, x, tol, backward[k], settings.acceleration, deadline))
        extra_jacobians[0] += out.jacobians
        if out.lost:
            lost["deadline" if time.perf_counter() >= deadline else out.lost] += 1
            return None
        reversed_control[0] = backward[k]
        return out

    keys: list[list[int]] = []  # the generator keys of the starts drawn, in order
    rec = _phases(shoot, settings, backward, search_tol, t0, finish, progress, keys)
    found = rec.found or Finished()
    ok = found.error <= tol
    out_of_time = rec.timed_out or time.perf_counter() >= deadline  # the search stops short of a deadline it would pass
    why = (f"not found within {settings.time_budget:.3g} s ({rec.starts} start(s))" if out_of_time
           else f"not found: all {rec.starts} start(s) stalled")
    how = ", reversing a control of the inverse problem" if reversed_control[0] else ""
    msg = (f"reached the targets after {rec.starts} start(s){how}" if ok
           else not_found(blocks, X, Y, why=why, segments=S, best=rec.best, finite=finite, steps=total, lost=lost,
                          search_tol=search_tol))
    return Solution.of(found.steps, success=ok, message=msg, error=found.error, moves=rec.starts,
                       jacobians=rec.jacobians + extra_jacobians[0], wall_time=time.perf_counter() - t0,
                       settings=asdict(settings), seeds=keys, dps=found.dps, lost=dict(lost))


def _phases(shoot: Shooting, settings: Settings, backward: list[bool], search_tol: float, t0: float,
            finish: Callable, progress: Callable[[str], None] | None, keys: list) -> PopulationRecord:
    """The search's phases in turn (module docstring), each a population fit with its share of
    the time budget and of ``max_starts``, of the problem and (``backward``) its inverse, until
    one hands ``finish(shooting, k, member)`` a member it finishes.  The keys of the starts
    drawn are appended to ``keys``; returns the record over the phases searched."""
    finite, deadline = shoot.scheme == "euler", t0 + settings.time_budget
    last = [t0]
    done = PopulationRecord()  # the phases searched before this one

    def report(rec: PopulationRecord) -> None:
        if progress and time.perf_counter() - last[0] > 2.0:
            last[0] = time.perf_counter()
            progress(f"{done.starts + rec.starts} starts, {done.jacobians + rec.jacobians} Jacobians: "
                     f"best max |residual| = {min(done.best, rec.best):.2e}")

    share = 0.0
    for p, phase in enumerate(settings.phases):
        share += phase["share"]
        phase_settings = replace(settings, **{k: v for k, v in phase.items() if k not in ("share", "substeps")})
        sh = replace(shoot, substeps=1 if finite else phase.get("substeps", settings.substeps))
        shootings = [replace(sh, X=sh.Y, Y=sh.X) if b else sh for b in backward]

        def draw(k, i, p=p, phase_settings=phase_settings, shootings=shootings):
            keys.append(start_key(settings.seed, i, backward[k], p))
            return start(shootings[k], phase_settings, i, backward[k], p)

        last_phase = p == len(settings.phases) - 1
        rec = population_lm(shootings, size=settings.population, start=draw,
                            tol=search_tol, max_iter=settings.max_iter,
                            max_starts=max(1, math.ceil(phase["share"] * settings.max_starts)),
                            deadline=deadline if last_phase else min(deadline, t0 + share * settings.time_budget),
                            finish=lambda k, x, shootings=shootings: finish(shootings[k], k, x),
                            patience=settings.patience, acceleration=settings.acceleration, report=report)
        done = PopulationRecord(done.starts + rec.starts, done.jacobians + rec.jacobians, min(done.best, rec.best), rec.found,
                                rec.timed_out)
        if rec.found is not None:
            break
    return done
