"""The engine's self-checks: conventions and invariants measured on seeded instances.

Each check compares a float64 computation with an independent one (a high-precision replay, a
matrix exponential, an exact symmetry) and holds the difference against a bound whose origin it
states.  Integration error *estimates* enter the bounds with a safety factor of 10, so these
are consistency checks, not certificates.  ``verify selfcheck`` runs them (``make verify``
first, before the theorem checks), into their own report.

>>> checks = run(seed=0, shapes=[(1, 2, 1)])
>>> len(checks), all(c.passed for c in checks)
(21, True)
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

from verify.io.witness import dumps, make, parse
from verify.model.attention import jacobian, jvp
from verify.model.backend import UNIT, namespace, precision
from verify.model.blocks import Block, gaussian_blocks
from verify.model.flow import flow
from verify.model.network import apply, control_to_network
from verify.reporting.results import Check, check
from verify.verdicts.replay import replay

SAFETY = 10.0  # factor applied to integration error *estimates* when they serve as bounds
HP_DIGITS = 40
SENS_DIGITS = 25  # tangent propagation costs n d times a plain flow; 25 digits suffice against float64


def _instance(seed: int, N: int, n: int, d: int, causal: bool = False) -> tuple[tuple[Block, Block], np.ndarray, list]:
    rng = np.random.default_rng([seed, N, n, d, int(causal)])
    blocks = gaussian_blocks(seed, d, causal=causal)
    X = rng.normal(size=(N, n, d))
    control = [(k % 2, float(rng.uniform(-1.0, 1.0))) for k in range(4)]
    return blocks, X, control


QUICK_SHAPES = [(2, 3, 2)]
STANDARD_SHAPES = [(2, 3, 2), (3, 4, 2), (2, 3, 1), (2, 2, 3)]


def run(seed: int = 0, shapes: list[tuple[int, int, int]] = STANDARD_SHAPES) -> list[Check]:
    """All self-checks on instances of the given (N, n, d) drawn from ``seed``."""
    out: list[Check] = []
    for N, n, d in shapes:
        tag = f"N={N},n={n},d={d}"
        for causal in (False, True):
            t = f"{tag},{'causal' if causal else 'full'}"
            blocks, X, control = _instance(seed, N, n, d, causal)
            out += _derivative_checks(t, blocks, X)
            out += _flow_checks(t, blocks, X, control)
            out.append(_witness_check(t, blocks, X, control))
        blocks, X, control = _instance(seed, N, n, d)
        out.append(_permutation_check(tag, blocks, X, control))
        out.append(_coincidence_check(tag, blocks, X, control))
        cblocks, cX, ccontrol = _instance(seed, N, n, d, causal=True)
        out.append(_first_token_check(tag, cblocks, cX, ccontrol))
    return out


_DIFF = f"max |float64 - {HP_DIGITS}-digit value|"


def _hp_diff(a: np.ndarray, b_hp: np.ndarray) -> float:
    with precision(HP_DIGITS):
        return float(np.max(np.abs(namespace("mpmath").asarray(a) - b_hp)))


def _derivative_checks(tag: str, blocks, X) -> list[Check]:
    U = np.random.default_rng(7).normal(size=X.shape)
    with precision(HP_DIGITS):
        xp = namespace("mpmath")
        Xh, Uh = xp.asarray(X), xp.asarray(U)
        jvp_hp = jvp(blocks[0], Xh, Uh)
        jac_hp = jacobian(blocks[0], Xh)
    scale = float(np.max(np.abs(X))) ** 2 * float(np.max(np.abs(U))) + 1
    bound = 1e3 * X.shape[1] * UNIT * scale
    origin = "1e3 n u |X|^2 |U| (float64 rounding of the analytic formula)"
    return [
        check(f"jvp float64 vs {HP_DIGITS} digits [{tag}]", _hp_diff(jvp(blocks[0], X, U), jvp_hp), bound, origin,
              quantity=_DIFF),
        check(f"jacobian float64 vs {HP_DIGITS} digits [{tag}]", _hp_diff(jacobian(blocks[0], X), jac_hp), bound, origin,
              quantity=_DIFF),
    ]


def _flow_checks(tag: str, blocks, X, control) -> list[Check]:
    fwd = flow(blocks, control, X, sensitivities=True)
    back = flow(blocks, [(b, -t) for b, t in reversed(control)], fwd.end)
    est = fwd.error_estimate + back.error_estimate
    hp = flow(blocks, control, X, dps=HP_DIGITS)
    hp_sens = flow(blocks, control, X, dps=SENS_DIGITS, sensitivities=True)
    R0 = float(np.max(np.linalg.norm(X, axis=-1)))
    growth = R0
    for b, t in control:
        growth *= np.exp(np.linalg.norm(blocks[b].V, 2) * abs(t))
    R1 = float(np.max(np.linalg.norm(fwd.end, axis=-1)))
    dur_scale = float(np.max(np.abs(hp_sens.d_durations.astype(float)))) + 1
    net = control_to_network(control, 8)
    netres = apply(blocks, net, X, sensitivities=True)
    nethp = apply(blocks, net, X, dps=HP_DIGITS, sensitivities=True)
    return [
        check(f"flow then reverse returns [{tag}]", np.max(np.abs(back.end - X)), SAFETY * est + 1e3 * UNIT,
              "10 x (forward + backward integration error estimates) + 1e3 u", quantity="max |X - reversed flow of X|"),
        check(f"flow float64 vs {HP_DIGITS} digits [{tag}]", _hp_diff(fwd.end, hp.end), SAFETY * fwd.error_estimate + 1e3 * UNIT,
              "10 x float64 integration error estimate + 1e3 u", quantity=_DIFF),
        check(f"duration sensitivities float64 vs {SENS_DIGITS} digits [{tag}]", _hp_diff(fwd.d_durations, hp_sens.d_durations),
              1e-10 * dur_scale, "1e-10 x max |d Phi / d tau| (float64 tangent propagation, cond <= 1e6)",
              quantity=f"max |float64 - {SENS_DIGITS}-digit value|"),
        check(f"growth bound max_i |x_i(T)| <= R0 exp(sum ||V_b|| |tau|) [{tag}]", R1 / growth, 1.0,
              "Gronwall: |dx_i/dt| <= ||V||_2 max_j |x_j|", quantity="max_i |x_i(T)| over the Gronwall bound"),
        check(f"network float64 vs {HP_DIGITS} digits [{tag}]", _hp_diff(netres.end, nethp.end), 1e3 * len(net) * UNIT * (R1 + 1),
              "1e3 L u max|x| (rounding of L residual layers)", quantity=_DIFF),
        check(f"layer-step sensitivities float64 vs {HP_DIGITS} digits [{tag}]", _hp_diff(netres.d_steps, nethp.d_steps),
              1e-10 * (float(np.max(np.abs(nethp.d_steps.astype(float)))) + 1), "1e-10 x max |d X_L / d h|", quantity=_DIFF),
    ]


def _witness_check(tag: str, blocks, X, control) -> Check:
    Y = flow(blocks, control, X, dps=HP_DIGITS).end
    doc = make(blocks, X, Y, "continuous", control, 1e-11)
    verdict = replay(parse(dumps(doc)))
    return check(f"witness round trip replays within tolerance [{tag}]", verdict["error"] + verdict["integration_error_estimate"],
                 doc["tolerance"], "tolerance written into the witness",
                 quantity="max |image - target| + integration error estimate, float64 replay")


def _permutation_check(tag: str, blocks, X, control) -> Check:
    perm = np.random.default_rng(3).permutation(X.shape[1])
    a = flow(blocks, control, X).end[:, perm]
    b = flow(blocks, control, X[:, perm]).end
    return check(f"full attention is permutation equivariant [{tag}]", np.max(np.abs(a - b)), 1e-12,
                 "1e-12: two float64 integrations of the same trajectory, estimate 1e-14 each",
                 quantity="max |permuted flow - flow of the permuted inputs|")


def _coincidence_check(tag: str, blocks, X, control) -> Check:
    Xc = X.copy()
    Xc[:, -1] = Xc[:, 0]
    end = flow(blocks, control, Xc).end
    gap = np.max(np.abs(end[:, -1] - end[:, 0]))
    return check(f"coincident tokens stay coincident [{tag}]", gap, 1e3 * UNIT * (np.max(np.abs(end)) + 1),
                 "1e3 u max|x|: the two tokens follow identical arithmetic up to summation order",
                 quantity="max |x_n(T) - x_1(T)| for x_n(0) = x_1(0)")


def _first_token_check(tag: str, blocks, X, control) -> Check:
    end = flow(blocks, control, X).end
    x1 = X[:, 0, :].T
    for b, t in control:
        x1 = scipy.linalg.expm(t * blocks[b].V) @ x1
    gap = np.max(np.abs(end[:, 0, :] - x1.T))
    return check(f"causal first token moves by expm(tau V) [{tag}]", gap, 1e-12 * (np.max(np.abs(x1)) + 1),
                 "1e-12 relative: float64 integration (estimate 1e-14) against scipy.linalg.expm",
                 quantity="max |first tokens - expm products applied to x_1|")
