"""The result of a search: a control or network and how it was found.

>>> Solution.of([(0, 0.5), (1, -0.25)], success=True, message="found", error=0.0, moves=1, jacobians=3,
...             wall_time=0.1).total_duration
0.75
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from verify.search.steps import Steps


@dataclass(kw_only=True)
class Solution:
    """What a search returns (built by keyword): whether it succeeded and why (``message``),
    the control or network, its replayed error, its depth and total absolute duration, the starts
    (``moves``) and Jacobians it took, its wall time, the settings and seeds that reproduce it,
    the digits it replays at (None: float64), the fits lost in the finish by stage (``lost``,
    keys of :data:`verify.search.finish.LOSSES`) and, after pruning, the depth before."""

    success: bool
    message: str
    steps: Steps = field(repr=False)  # (block, duration) in continuous depth, (block, step) layers in finite depth
    error: float
    depth: int
    total_duration: float
    moves: int
    jacobians: int
    wall_time: float
    settings: dict[str, Any] = field(default_factory=dict, repr=False)
    seeds: list[Any] = field(default_factory=list, repr=False)
    dps: int | None = None  # None: the steps are float64 and replay in float64; else replay at dps digits
    lost: dict[str, int] = field(default_factory=dict)  # fits lost in the finish, by stage (LOSSES); lm only
    pruned_from: int | None = None  # the depth before pruning (Settings.prune), when pruning removed steps

    @classmethod
    def of(cls, steps: Steps, **fields: Any) -> Solution:
        """A solution whose ``depth`` and ``total_duration`` are those of ``steps``."""
        return cls(steps=steps, depth=len(steps), total_duration=float(sum(abs(float(t)) for _, t in steps)), **fields)
