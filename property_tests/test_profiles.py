"""The Hypothesis profiles govern every property: no count is hard-coded, and ``thorough``
scales the reduced ones (``conftest.examples``)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def test_no_property_hard_codes_its_number_of_examples():
    literal = re.compile(r"max_examples\s*=\s*(?!examples\()")
    offenders = [f"{p.name}:{i}" for p in sorted(HERE.glob("test_*.py")) if p.name != Path(__file__).name
                 for i, line in enumerate(p.read_text().splitlines(), 1) if literal.search(line)]
    assert not offenders, f"use conftest.examples(count, why) so the profile scales it: {offenders}"


def test_thorough_gives_reduced_properties_twenty_times_their_ci_examples():
    probe = ("import property_tests.conftest, property_tests.test_rank as r, property_tests.test_witness as w; "
             "print(r.test_full_attention_rank_is_certified_at_the_prediction._hypothesis_internal_use_settings"
             ".max_examples, w.test_round_trip._hypothesis_internal_use_settings.max_examples)")
    counts = {}
    for profile in ("ci", "thorough"):
        p = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=HERE.parent,
                           env={**os.environ, "HYPOTHESIS_PROFILE": profile})
        assert p.returncode == 0, p.stderr
        counts[profile] = [int(x) for x in p.stdout.split()]
    assert counts == {"ci": [15, 10], "thorough": [300, 200]}
