"""Checks shared by the theorems: bracket-rank witnesses and constructed controls.

* :func:`rank_checks` -- the bracket rank of a collection proved equal to the invariants' exact
  bound (:func:`verify.lie.invariants.rank_bound`): at most the bound by the invariants, at least
  by an Arb certificate of a minor (:func:`verify.lie.rank.analyse`); a deficit below the bound
  is never decided in floating point, so an unproved rank fails the check.
* :func:`control_checks` -- a control (continuous) or network (finite) found by the solver, its
  float64 replay against the tolerance, and its replay at 40 digits from the witness file,
  certified when its image enclosed in Arb balls (:func:`verify.verdicts.replay.certify`, at most
  CERTIFY_SECONDS) lies within the tolerance, failed when the enclosure lies outside it.
* :func:`existence_check` -- for a certified control (standard and paper profiles), the
  Krawczyk proof that exact durations near it map the inputs exactly onto the targets (the
  theorem's claim for the instance); not proved within EXISTENCE_SECONDS, the check fails.
* :func:`refusal_check` -- inadmissible data must be refused with a reason.

Every check says what its bound is and where the bound comes from.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence

import numpy as np

from verify.io import witness
from verify.io.errors import InputError
from verify.lie import certify, rank
from verify.lie.admissibility import check_admissible
from verify.lie.hall import basis, degree
from verify.model.blocks import Block
from verify.model.dynamics import CONTINUOUS, dynamics
from verify.reporting.results import Check, check, holds
from verify.search.settings import Settings
from verify.search.solver import solve
from verify.verdicts import replay
from verify.verdicts.exact_durations import certify_control
from verify.verdicts.exact_steps import certify_network

BELOW_ONE = float(np.nextafter(1.0, 0.0))  # strict "< 1" as a "<=" bound
HP_DIGITS = 40
CERTIFY_SECONDS = 120.0  # per witness (standard profile about 6 s; m = 18 controls 24-353 s, docs/verdicts.md); then: uncertified
EXISTENCE_SECONDS = 300.0  # per control (standard profile about 7 s; m = 18 controls 33-40 s where proved); beyond: fails


RANK_ORIGIN = (r"rank $\ge$ bound: a bound $\times$ bound minor $A$ of the bracket matrix and a float64 inverse $R$ with "
               r"$\lVert I - RA \rVert_F < 1$ in Arb, so $A$ is invertible; rank $\le$ bound: the invariants "
               "of the signed token permutations, exactly")
RANK_QUANTITY = r"$\lVert I - RA \rVert_F$, Arb upper bound (infinite: rank not proved)"
KRAWCZYK_QUANTITY = r"$\sup \lvert K(B) - c \rvert / r$, Arb upper bound (infinite: not proved)"


def rank_checks(label: str, blocks: Sequence[Block], X: np.ndarray, seconds: float = math.inf) -> list[Check]:
    """The bracket rank proved equal to the invariants' exact bound (:func:`verify.lie.rank.analyse`):
    the value is ||I - R A||_F of the certificate (below 1 proves it), infinite when the rank
    was not proved (an undecided rank fails the check, whatever the floating point showed;
    so does one not proved within ``seconds``)."""
    res = rank.analyse(blocks, X, deadline=time.perf_counter() + seconds)
    cert = res.certificate or {}
    details = {k: getattr(res, k) for k in ("dimension", "sharp", "rank", "min_degree", "max_degree", "counting_degree",
                                            "sigma_min", "gap", "decided_by", "verdict")} | {"rank_bound": res.bound}
    details["sigma_by_degree"] = _sigma_by_degree(np.asarray(res.matrix, dtype=float) / np.asarray(res.scales, dtype=float),
                                                  res.max_degree)
    details["noise_level"] = res.noise_level
    value = cert.get("norm_I_minus_RA_upper", np.inf) if res.certified else np.inf
    return [check(f"bracket rank equals the invariants' bound {res.bound} of {res.dimension} [{label}]", value, BELOW_ONE,
                  RANK_ORIGIN, quantity=RANK_QUANTITY, certified=res.certified, sigma_min_lower=cert.get("sigma_min_lower", 0.0),
                  columns=cert.get("columns", []), reasons=res.reasons, undecided=res.undecided or "", **details)]


def gl_check(blocks: Sequence[Block], label: str = "") -> Check:
    """V_0, V_1 generate gl(d), decided exactly over Q (:func:`verify.lie.certify.generates_gl`)."""
    gl = certify.generates_gl(blocks[0].V, blocks[1].V)
    return check(r"$V_0, V_1$ generate $\mathfrak{gl}(d)$" + (f" [{label}]" if label else ""), gl["dimension"] - gl["rank"],
                 0.0, r"$\dim \mathfrak{gl}(d) = d^2$: the words span it exactly when nothing is missing; "
                 f"decided by the {gl['method']}",
                 quantity=r"$d^2$ minus the rank of the words in $V_0, V_1$, exactly over $\mathbb{Q}$",
                 certified=bool(gl["certified"]), rank=gl["rank"], dimension=gl["dimension"], words=gl["words"],
                 max_degree_used=gl["max_degree_used"])


def _sigma_by_degree(S: np.ndarray, K: int) -> dict[str, list[float]]:
    """float64 singular values of the degree-scaled columns of degree <= k, for k = 1..K (for the
    appendix's figure; the rank decision itself is rank.analyse's)."""
    degs = np.array([degree(w) for w in basis(K)])
    return {str(k): [float(v) for v in np.linalg.svd(S[:, degs <= k], compute_uv=False)] for k in range(1, K + 1)}


def trajectory(blocks: Sequence[Block], X: np.ndarray, steps, depth: str, per_step: int = 4) -> list:
    """States along a control (each step cut into ``per_step`` pieces) or network (each layer)."""
    dyn = dynamics(depth)
    pieces = per_step if dyn is CONTINUOUS else 1  # a layer has no states in between
    states, Z = [X], X
    for b, t in steps:
        for _ in range(pieces):
            Z = dyn.end(blocks, [(b, t / pieces)], Z)
            states.append(Z)
    return np.asarray(states).tolist()


def solver_settings(depth: str, seed: int, profile: dict) -> Settings:
    """The solver's settings for a theorem check: ``profile["starts"]`` random starts of at
    most the depth's ``max_iter`` Jacobians each (:data:`verify.search.settings.DEPTH_DEFAULTS`), so the
    result does not depend on the machine's speed and two runs write the same report;
    ``profile["budget"]`` seconds is only a safety cap (a check that hits it fails as not found)."""
    return Settings(depth=depth, seed=seed, time_budget=profile["budget"],
                    max_starts=profile["starts"])


def control_checks(label: str, blocks: Sequence[Block], X: np.ndarray, Y: np.ndarray, depth: str,
                   settings: Settings, progress: Callable[[str], None] | None = None,
                   existence: bool = False) -> tuple[list[Check], object]:
    """Solve, replay (in float64, or at the digits the solver needed for an unstable network),
    write the witness (kept in the check's details, which the report writes to a file:
    :mod:`verify.reporting.witness_files`) and replay it at 40 digits; with ``existence`` (the standard and paper
    profiles: about 7 s a control at m = 8, docs/verdicts.md 2026-12-06), a certified control
    also gets :func:`existence_check`."""
    sol = solve(blocks, X, Y, settings, progress)
    unit = dynamics(depth).unit
    info = {"depth": sol.depth, "unit": unit, "total_duration": sol.total_duration, "starts": sol.moves,
            "message": sol.message}
    if sol.success and X.shape[2] == 2:
        info["trajectory"] = trajectory(blocks, X, sol.steps, depth)  # for the appendix's figure
    arithmetic = "float64" if sol.dps is None else f"{sol.dps}-digit"  # a network too unstable for float64
    out = [check(f"{'network' if depth == 'finite' else 'control'} reaches the targets, {arithmetic} replay [{label}]",
                 sol.error, settings.tolerance, "the solver's tolerance",
                 quantity=f"max |image - target| of the {arithmetic} replay (infinite: nothing found)", **info)]
    if sol.success:
        out += witness_checks(label, blocks, X, Y, depth, sol.steps, settings.tolerance, sol.dps,
                              existence=existence and depth == "continuous")
    else:
        out.append(check(f"the witness file maps the inputs within its tolerance [{label}]", np.inf, settings.tolerance,
                         "the solver's tolerance", quantity="infinite: the solver found nothing within its budget"))
    return out, sol


def witness_checks(label: str, blocks: Sequence[Block], X: np.ndarray, Y: np.ndarray, depth: str, steps, tolerance: float,
                   dps: int | None = None, *, existence: bool = False, certify_seconds: float = CERTIFY_SECONDS,
                   existence_seconds: float = EXISTENCE_SECONDS, **details) -> list[Check]:
    """The witness of ``steps`` (a control or network, replayed in float64 or at ``dps`` digits)
    written and replayed at 40 digits, its image certified in Arb within ``certify_seconds``
    (the row's value: the Arb upper bound, else the estimate); with ``existence``, a certified
    witness also gets its existence proof within ``existence_seconds`` (:func:`existence_check`:
    exact durations, or exact steps of the network).  ``details`` join the replay row's."""
    doc = witness.make(blocks, X, Y, depth, steps, tolerance, precision=witness.precision_label(dps))
    w = witness.parse(witness.dumps(doc))
    verdict = replay.replay(w, HP_DIGITS)
    cert = replay.certify(w, deadline=time.perf_counter() + certify_seconds)
    rounding = "integration error estimate" if depth == "continuous" else "rounding estimate"
    value, quantity = (verdict["error"] + verdict["integration_error_estimate"],
                       f"max |image - target| of a {HP_DIGITS}-digit replay + its {rounding} (Arb did not decide)")
    if cert["verdict"] == "CERTIFIED":  # the Arb upper bound is the value, and the row is certified
        value, quantity = cert["error_upper"], "max |image - target|, Arb upper bound (every number as written)"
    elif cert["verdict"] == "FAIL":  # a ball lies wholly outside: the witness is refuted whatever the estimate says
        value, quantity = np.inf, "infinite: an Arb ball of the image lies wholly outside the tolerance"
    out = [check(f"the witness file maps the inputs within its tolerance [{label}]", value, doc["tolerance"],
                 "the tolerance written into the witness", quantity=quantity,
                 certified=cert["verdict"] == "CERTIFIED", error=verdict["error"], witness=doc,
                 integration_error_estimate=verdict["integration_error_estimate"],
                 certificate={k: cert.get(k) for k in ("verdict", "error_upper", "width", "validated_steps",
                                                       "precision", "reason") if k in cert}, **details)]
    if existence and cert["verdict"] == "CERTIFIED":
        out.append(existence_check(label, blocks, X, Y, steps, tolerance, depth, existence_seconds))
    return out


def existence_check(label: str, blocks: Sequence[Block], X: np.ndarray, Y: np.ndarray, steps, tolerance: float,
                    depth: str = "continuous", seconds: float = EXISTENCE_SECONDS) -> Check:
    """The instance of the theorem proved: exact durations near the control's N n d free ones
    map X exactly onto Y (:func:`verify.verdicts.exact_durations.certify_control`), or exact
    steps near the network's (:func:`verify.verdicts.exact_steps.certify_network`)."""
    deadline = time.perf_counter() + seconds
    if depth == "finite":
        ex = certify_network(blocks, steps, X, Y, deadline=deadline)
        kind = "network"
    else:
        ex = certify_control(blocks, steps, X, Y, tolerance=tolerance, deadline=deadline)
        kind = "control"
    what = "durations" if kind == "control" else "steps"
    return check(f"exact {kind} exists: Krawczyk on {X.size} {what} [{label}]", ex.get("K_reach_over_radius", np.inf),
                 BELOW_ONE, r"Krawczyk-type test: $\sup \lvert K(B) - c \rvert < r$ proves exact " + what + " in the box $B$ "
                 + ("(Brouwer; the validated flow's Taylor model in the durations, in Arb)" if kind == "control"
                    else "(Brouwer; the layers' Jacobian enclosed in Arb)"), quantity=KRAWCZYK_QUANTITY,
                 certified=bool(ex["certified"]), **{k: ex.get(k) for k in ("radius", "distance", "centre", "free_steps",
                                                                             "free_layers", "contraction_upper",
                                                                             "newton_step_upper", "reason")})


def refusal_check(label: str, X: np.ndarray, Y: np.ndarray, causal: bool, obstruction: str) -> Check:
    """Holds when :func:`verify.lie.admissibility.check_admissible` refuses the data."""
    try:
        check_admissible(X, Y, causal)
    except InputError as e:
        return holds(f"inadmissible data refused: {obstruction} [{label}]", True, REFUSAL_ORIGIN, kind="exact", reason=str(e))
    return holds(f"inadmissible data refused: {obstruction} [{label}]", False, REFUSAL_ORIGIN, kind="exact",
                 reason="accepted: not refused")


REFUSAL_ORIGIN = "an invariant of the flows forbids these targets"
