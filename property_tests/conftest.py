"""Hypothesis profiles: ``ci`` (default, bounded for CI) and ``thorough`` (make test-thorough).

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
