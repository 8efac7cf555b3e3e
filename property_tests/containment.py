"""The containment check shared by the tests of the Taylor-model enclosures (flows and
networks with free durations or steps), kept apart from the test modules so that importing it
inside a Hypothesis test defines no test of its own."""

from __future__ import annotations

import flint
import mpmath
import numpy as np

from verify.model.backend import precision


def taylor_model_holds(enc, steps: list, free: list, rho: float, rng: np.random.Generator, image, tries: int = 5,
                       digits: int = 50) -> None:
    """The end point at steps (durations or step sizes) moved by sigma in [-rho, rho] on the
    free ones, ``image(moved)`` (exact to ``digits``, beyond the enclosure's working precision),
    lies in centre + slope sigma + rest, for sigma at corners and inside the cube."""
    for _ in range(tries):
        sigma = rho * rng.choice([-1.0, 1.0, rng.uniform(-1, 1)], size=len(free))
        moved = [(b, repr(t)) for b, t in steps]
        with mpmath.workdps(60):
            for j, i in enumerate(free):
                moved[i] = (steps[i][0], mpmath.nstr(mpmath.mpf(steps[i][1]) + mpmath.mpf(float(sigma[j])), 55))
        exact = image(moved).ravel()
        with precision(digits):
            model = enc.centre.ravel() + np.matmul(enc.slope, np.vectorize(flint.arb, otypes=[object])(sigma)) + \
                enc.rest.ravel()
            assert all(b.contains(flint.arb(str(y))) for b, y in zip(model, exact, strict=True))
