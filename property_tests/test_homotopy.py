"""The homotopy measurement's derivatives (property_tests/homotopy.py) against central differences."""

from __future__ import annotations

import numpy as np
import pytest

from property_tests.homotopy import stage_end
from theorems.reach import instance


@pytest.mark.parametrize("stage", [1, 4, "flow"])
def test_stage_derivatives_match_central_differences(stage):
    X, _, blocks = instance(8, 1, 7)
    pattern, h = [0, 1, 0, 1], np.array([0.3, -0.2, 0.25, 0.1])
    _, J = stage_end(blocks, list(zip(pattern, h, strict=True)), X, stage)
    eps = 1e-6
    for k in range(len(h)):
        up, down = h.copy(), h.copy()
        up[k] += eps
        down[k] -= eps
        fd = (stage_end(blocks, list(zip(pattern, up, strict=True)), X, stage)[0]
              - stage_end(blocks, list(zip(pattern, down, strict=True)), X, stage)[0]).ravel() / (2 * eps)
        assert np.abs(np.asarray(J, dtype=float)[:, k] - fd).max() <= 1e-7 * (1 + np.abs(fd).max())
