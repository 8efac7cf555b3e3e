"""Hypothesis profiles: ``ci`` (default, bounded for CI) and ``thorough`` (make test-thorough).

Choose one with ``HYPOTHESIS_PROFILE=thorough`` or pytest's ``--hypothesis-profile=thorough``
(Hypothesis' plugin); ``--hypothesis-seed=N`` fixes the draws of a non-derandomized profile.
A test that cannot afford the profile's count states its count under ``ci`` and why, with
:func:`examples`, which scales it by the profile: ``thorough`` gives it 20 times as many (a
test of 20 under ``ci`` gets 400, as every other property does).

``ci`` is derandomized: every CI run draws the same examples, so a submission cannot fail on a
lucky draw that the author never saw; ``thorough`` draws fresh examples each run and is where
the hunt for counterexamples happens.

On failure Hypothesis prints the falsifying example and a ``@reproduce_failure`` blob, so a
counterexample can be replayed exactly; keep found ones as explicit ``@example`` regressions.
"""

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", max_examples=20, deadline=None, print_blob=True, derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "thorough", max_examples=400, deadline=None, print_blob=True, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
CI_EXAMPLES = settings.get_profile("ci").max_examples


def examples(ci: int, why: str) -> int:
    """The examples of a property that costs too much for the profile's count: ``ci`` under
    the ``ci`` profile, scaled by the active profile's count over ``ci``'s (read when the test
    module is imported, after pytest's ``--hypothesis-profile`` took effect).  ``why`` says
    what one example costs; it is required so that no count is hard-coded without a reason."""
    if not why.strip():
        raise ValueError("say why this property runs fewer examples than the profile")
    return max(1, round(ci * settings.default.max_examples / CI_EXAMPLES))
