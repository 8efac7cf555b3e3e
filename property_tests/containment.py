"""The containment check shared by the tests of the Taylor-model enclosures (flows and
networks with free durations or steps), kept apart from the test modules so that importing it
inside a Hypothesis test defines no test of its own."""

from __future__ import annotations

from fractions import Fraction

import flint
import numpy as np

from verify.model.backend import precision


def taylor_model_holds(enc, steps: list, free: list, rho: float, rng: np.random.Generator, image, tries: int = 5,
                       digits: int = 50) -> None:
    """The end point at steps (durations or step sizes) moved by sigma in [-rho, rho] on the
    free ones, ``image(moved)`` (exact to ``digits``, beyond the enclosure's working precision),
    lies in centre + slope sigma + rest + generators [-1, 1]^g, for sigma at corners and inside
    the cube."""
    for _ in range(tries):
        sigma = rho * rng.choice([-1.0, 1.0, rng.uniform(-1, 1)], size=len(free))
        moved = [(b, _decimal(Fraction(t))) for b, t in steps]  # repr(0.1) would mean 1/10 exactly
        for j, i in enumerate(free):
            moved[i] = (steps[i][0], _decimal(Fraction(steps[i][1]) + Fraction(float(sigma[j]))))
        exact = image(moved).ravel()
        with precision(digits):
            model = enc.centre.ravel() + np.matmul(enc.slope, np.vectorize(flint.arb, otypes=[object])(sigma)) + \
                enc.rest.ravel() + _hull(enc.generators)
            assert all(b.contains(flint.arb(str(y))) for b, y in zip(model, exact, strict=True))


def _hull(G: np.ndarray) -> np.ndarray:
    """The balls [-s, s], s = sum_j |G_j| over each row of the generators G (N, nd, g), summed
    in Arb (apart from the code under test's float bound)."""
    rows = G.reshape(-1, G.shape[-1])
    return np.array([flint.arb(0, sum((abs(flint.arb(v)) for v in row), flint.arb(0)).upper()) for row in rows],
                    dtype=object)


def _decimal(q: Fraction) -> str:
    """The exact decimal of a binary rational p / 2^k (= p 5^k / 10^k), as the image's decimal
    steps must be: repr(0.1) writes 1/10 exactly, not the binary 0.1, and a moved step written
    to 55 digits was off by 1e-55; either put the 50-digit image 1.6e-16 outside a Lohner set
    of radius 2e-18 (seed 145, (2, 4, 4)), a difference of problem, not of enclosure."""
    k = q.denominator.bit_length() - 1
    assert q.denominator == 1 << k, "a binary rational"
    digits = str(abs(q.numerator) * 5 ** k).rjust(k + 1, "0")
    return ("-" if q < 0 else "") + digits[: len(digits) - k] + ("." + digits[len(digits) - k:] if k else "")
