"""T2, universality at finite depth: residual layers X -> X + h F_b(X) with real steps h.

Statement: for Gaussian blocks and admissible data X, Y there is a network of finitely many
layers (b_l, h_l) mapping X onto Y; and a continuous control split into layers of step h is
reproduced with an error at most C h.

What is checked:

1. Network witness: the solver constructs a network for targets that are the image of the
   inputs under a hidden random network, replayed in float64 and at 40 digits.
2. Krawczyk-type certificate (:mod:`verify.verdicts.exact_steps`): all but N n d step sizes fixed at
   their binary64 values, the map from the free steps to the end point carried as a first-order
   Taylor model in a Lohner set over a box around the refined steps (in Arb, 30 digits and up);
   K(B) inside B proves that the box holds a set of step sizes interpolating X -> Y exactly.  A box displaced by three radii
   must be refused (a negative control: the test can fail).
3. Discretisation (:mod:`verify.model.discretisation`): for a seeded continuous control on the
   inputs rescaled to largest token norm 1/2 (the bound grows like exp(Lip T) with
   Lip ~ ||V|| (1 + 4 beta ||Q^T K|| R^2): it is informative for R T of order one, astronomically
   loose beyond), the distance between the exact flow (Taylor integrator at 30 digits) and
   its splitting into layers of step h is at most the derived bound, on a ladder of h; the
   fitted order is 1 (|slope - 1| <= 0.1: first-order method, pre-asymptotic terms of relative
   size h); the slack bound / error is reported.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from verify.model.blocks import gaussian_blocks
from verify.model.discretisation import euler_bound, fitted_order, norm
from verify.model.flow import flow
from verify.model.network import apply, control_to_network, rounding_estimate
from verify.reporting.results import Check, check, holds
from verify.verdicts.exact_steps import certify_network

from .instances import collection, hidden_control_targets, rng
from .witnesses import BELOW_ONE, KRAWCZYK_QUANTITY, control_checks, solver_settings

NAME = "finite_depth"
TITLE = "Universality at finite depth (residual layers)"
STATEMENT = ("For two Gaussian attention blocks and admissible data X, Y there is a residual network of "
             "layers X -> X + h_l F_(b_l)(X) with real steps h_l mapping X onto Y; splitting a continuous "
             "control into layers of step h costs an error at most C h.")
LATEX = (r"For $\theta_0,\theta_1$ Gaussian and admissible $X,Y$ there are $b_l\in\{0,1\}$, $h_l\in\mathbb{R}$ "
         r"($l=1,\dots,L$) with $(\mathrm{id}+h_L F_{\theta_{b_L}})\circ\cdots\circ(\mathrm{id}+h_1 F_{\theta_{b_1}})(X)=Y$; "
         r"and $\|\Phi^{h}(X)-\Phi(X)\|\le C h$ for a control split into layers of step $h$.")
HYPOTHESES = [
    "blocks: Q, K, V with i.i.d. N(0, 1/d) entries (generic)",
    "inputs and targets admissible (as in T1)",
]
LADDER = (32, 64, 128, 256, 512)  # layers per control step
ORDER_TOLERANCE = 0.1
DISPLACED = 3.0  # the negative control moves the box centre by this many radii
RADIUS = 0.5  # largest token norm of the discretisation instance

PROFILES = {
    "quick": dict(shape=(1, 2, 2), budget=120.0, starts=16, control_steps=4, duration=0.25),
    "standard": dict(shape=(2, 2, 2), budget=300.0, starts=16, control_steps=6, duration=0.25),
    "paper": dict(shape=(2, 3, 2), budget=1800.0, starts=32, control_steps=8, duration=0.25),
}


def krawczyk_checks(label: str, blocks, layers, X, Y) -> list[Check]:
    """The certificate on the network, and its refusal on a displaced box."""
    cert = certify_network(blocks, layers, X, Y)
    info = {k: cert.get(k) for k in ("radius", "free_layers", "fixed_layers", "digits", "contraction_upper",
                                     "distance", "newton_step_upper", "reason")}
    out = [check(f"Krawczyk: K(B) inside B, an exact interpolating set of steps in the box [{label}]",
                 cert.get("K_reach_over_radius", np.inf), BELOW_ONE,
                 r"Krawczyk: $\sup \lvert K(B) - c \rvert < r$ proves an exact zero in the box $B$ (Arb enclosure)",
                 quantity=KRAWCZYK_QUANTITY, certified=bool(cert["certified"]), **info)]
    if cert["certified"]:
        wrong = certify_network(blocks, layers, X, Y, free=cert["free_layers"], radius=cert["radius"],
                                digits=cert["digits"], centre_shift=DISPLACED)
        out.append(holds(f"Krawczyk refuses a box displaced by {DISPLACED:g} radii [{label}]", not wrong["certified"],
                         "negative control: no zero lies in the displaced box",
                         K_reach_over_radius=wrong.get("K_reach_over_radius")))
    return out


def discretisation_checks(label: str, blocks, X, seed: int, steps: int, duration: float) -> list[Check]:
    """Measured Euler error against the derived bound on a ladder of h, and the fitted order."""
    g = rng(seed, "discretisation control")
    control = [(k % 2, float(t)) for k, t in enumerate(g.uniform(-duration, duration, size=steps))]
    X = X * (RADIUS / norm(X))  # the bound grows like exp(Lip T), Lip ~ ||V|| (1 + 4 beta ||Q^T K|| R^2)
    exact = flow(blocks, control, X, dps=30).end.astype(float)
    errors, hs, bounds, out = [], [], [], []
    for k in LADDER:
        layers = control_to_network(control, k)
        end = apply(blocks, layers, X).end
        err = float(np.abs(end - exact).max())
        bound = euler_bound(blocks, layers, X) + rounding_estimate(len(layers), end)
        h = max(abs(t) for _, t in control) / k
        errors.append(err)
        hs.append(h)
        bounds.append(bound)
        out.append(check(f"Euler splitting error within the derived bound, h = {h:.3g} [{label}]", err, bound,
                         "Lipschitz/Gronwall recursion along the layers "
                         r"+ float64 rounding estimate $4 (L+1) u \max \lvert x \rvert$",
                         quantity="max |network - flow|: float64 layers against a 30-digit flow",
                         slack=bound / err if err > 0 else None, C_h=bound / h))
    order = fitted_order(hs, errors)
    out.append(check(f"fitted order of the splitting is 1 [{label}]", abs(order - 1.0), ORDER_TOLERANCE,
                     "explicit Euler is first order; 0.1 allows pre-asymptotic terms",
                     quantity="|p - 1|, p the least-squares slope of log error against log h", order=order,
                     h=hs, errors=errors, bounds=bounds, control=control))
    return out


def run(profile: str, seed: int, progress: Callable[[str], None] | None = None) -> list[Check]:
    p = PROFILES[profile]
    N, n, d = p["shape"]
    blocks = gaussian_blocks(seed, d)
    X = collection(seed, p["shape"], "inputs")
    Y = hidden_control_targets(blocks, X, seed, "finite", steps=2 * X.size)
    tag = f"N={N},n={n},d={d}"
    say = progress or (lambda s: None)
    say("T2: constructing a network")
    out, sol = control_checks(tag, blocks, X, Y, "finite", solver_settings("finite", seed, p), progress)
    if sol.success:
        say("T2: Krawczyk certificate")
        out += krawczyk_checks(tag, blocks, sol.steps, X, Y)
    else:
        out.append(check(f"Krawczyk: K(B) inside B [{tag}]", np.inf, BELOW_ONE, "no network to certify",
                         quantity="infinite: the solver found no network"))
    say("T2: discretisation bound")
    out += discretisation_checks(tag, blocks, X, seed, p["control_steps"], p["duration"])
    return out
