"""The dynamics of a depth: the flow of a control (continuous) or a residual network (finite).

The search, the finish and the verdicts ask the same four questions of either; one object per
depth answers them, so that no caller branches on the depth's name:

* ``image(blocks, steps, X)``: the end point in float64, None on overflow;
* ``exact_image(blocks, steps, X, dps)``: the end point at ``dps`` digits (mpmath numbers);
* ``jacobian(blocks, pattern, z, X)``: d end / d z (N n d, K), z the step sizes (networks:
  the layers' exact step derivatives) or the durations (flows: the exact sensitivities);
* ``estimated_image(blocks, steps, X, dps)``: the end point with an estimate of its error
  (flows: the integrator's, propagated; networks: the rounding the layers propagate).

:func:`dynamics` maps a depth's name (``"continuous"`` or ``"finite"``, as witnesses and the
solver's settings write it) to its object; ``unit`` names its steps in messages.

>>> import numpy as np
>>> from verify.model.blocks import gaussian_blocks
>>> blocks = gaussian_blocks(0, 2)
>>> X = np.random.default_rng(1).normal(size=(1, 2, 2))
>>> net = dynamics("finite")
>>> net.unit, net.jacobian(blocks, [0, 1], [0.1, -0.2], X).shape
('layers', (4, 2))
>>> bool(net.error(blocks, [(0, 0.1)], X, net.image(blocks, [(0, 0.1)], X)) == 0.0)
True
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from verify.io import validate
from verify.io.errors import InputError, IntegrationError
from verify.model.backend import UNIT, precision
from verify.model.blocks import Block
from verify.model.flow import flow
from verify.model.network import apply, propagated_rounding, rounding_estimate

Steps = Sequence[tuple[int, Any]]


@dataclass(frozen=True)
class EstimatedImage:
    """An image (an array in the replay's arithmetic), the estimate of its error, and the work
    it took (``{"taylor_steps": ...}`` for flows)."""

    end: Any
    estimate: float
    work: dict[str, Any]


@dataclass(frozen=True)
class Dynamics:
    """What the search and the verdicts ask of a depth (see the module docstring).
    ``depth``: its name in witnesses and settings; ``unit``: what its steps are called."""

    depth: str
    unit: str

    def end(self, blocks: Sequence[Block], steps: Steps, X: Any, *, dps: int | None = None,
            deadline: float = math.inf) -> Any:
        """The end point (raising :class:`IntegrationError` where the arithmetic cannot follow)."""
        raise NotImplementedError

    def d_steps(self, blocks: Sequence[Block], steps: Steps, X: Any, *, dps: int | None = None,
                deadline: float = math.inf) -> Any:
        """d end / d (step sizes or durations), rows (sequence, token, coordinate)."""
        raise NotImplementedError

    def estimated_image(self, blocks: Sequence[Block], steps: Steps, X: Any, dps: int | None = None,
                        progress: Callable[[str], None] | None = None) -> EstimatedImage:
        """The end point and an estimate of its error, in float64 or at ``dps`` digits
        (``progress`` hears of a long computation)."""
        raise NotImplementedError

    def image(self, blocks: Sequence[Block], steps: Steps, X: np.ndarray) -> np.ndarray | None:
        """The float64 image of X; None on overflow."""
        try:
            end = self.end(blocks, steps, X)
        except IntegrationError:
            return None
        return end if np.all(np.isfinite(end)) else None

    def error(self, blocks: Sequence[Block], steps: Steps, X: np.ndarray, Y: np.ndarray) -> float:
        """max |image - target| in float64; inf on overflow."""
        end = self.image(blocks, steps, X)
        return math.inf if end is None else float(np.abs(end - Y).max())

    def exact_image(self, blocks: Sequence[Block], steps: Steps, X: np.ndarray, dps: int,
                    deadline: float = math.inf) -> np.ndarray:
        """The image at ``dps`` digits (an object array of mpmath numbers).  Past ``deadline``
        (flows: a 30-digit flow of a long control can take a minute) raises
        :class:`IntegrationError`."""
        with precision(dps):
            return self.end(blocks, steps, X, dps=dps, deadline=deadline)

    def residual(self, blocks: Sequence[Block], pattern: Sequence[int], h: Sequence[Any], X: np.ndarray,
                 Y: np.ndarray, dps: int | None = None, deadline: float = math.inf) -> np.ndarray:
        """image - target (flattened) of the steps (pattern[l], h[l]); inf on overflow.  With
        ``dps``, the image at that many digits (:meth:`exact_image`, which raises on overflow
        or past ``deadline``), rounded to float64."""
        steps = list(zip(pattern, h, strict=True))
        if dps is not None:
            return (self.exact_image(blocks, steps, X, dps, deadline) - Y).ravel().astype(float)
        end = self.image(blocks, steps, X)
        return np.full(X.size, np.inf) if end is None else end.ravel() - Y.ravel()

    def jacobian(self, blocks: Sequence[Block], pattern: Sequence[int], z: Sequence[Any], X: np.ndarray,
                 deadline: float = math.inf, dps: int | None = None) -> np.ndarray:
        """The float64 Jacobian of the image with respect to z.  With ``dps``, a network's is
        computed at that many digits from z as given, then rounded (the float64 one of a
        network unstable enough to need them is not even a chord's); a flow's is always the
        float64 sensitivities."""
        return np.asarray(self.d_steps(blocks, list(zip(pattern, np.asarray(z, dtype=float), strict=True)), X,
                                       deadline=deadline), dtype=float)


class Network(Dynamics):
    """Finite depth: the layers X -> X + h F_b(X) (:func:`verify.model.network.apply`)."""

    def end(self, blocks, steps, X, *, dps=None, deadline=math.inf):
        return apply(blocks, steps, X, dps=dps).end

    def d_steps(self, blocks, steps, X, *, dps=None, deadline=math.inf):
        return apply(blocks, steps, X, dps=dps, sensitivities=True).d_steps

    def jacobian(self, blocks, pattern, z, X, deadline=math.inf, dps=None):
        if dps is None:
            return super().jacobian(blocks, pattern, z, X, deadline)
        with precision(dps):
            return self.d_steps(blocks, list(zip(pattern, z, strict=True)), X, dps=dps).astype(float)

    def estimated_image(self, blocks, steps, X, dps=None, progress=None):
        end = self.end(blocks, steps, X, dps=dps)
        scale = float(np.max(np.abs(np.asarray(end, dtype=float))))
        if not scale <= validate.MAX_MAGNITUDE:
            where = "float64" if dps is None else f"{dps} digits"
            raise IntegrationError(f"the network's image overflowed (max |x| = {scale:.3g} in {where}); "
                                   "its steps are too large for the data")
        unit = UNIT if dps is None else 10.0**-dps
        plain = rounding_estimate(len(steps), end, unit)
        # float64 sensitivities estimate the propagation; where they overflow, the per-layer estimate
        floats = [b.with_matrices(**{k: np.asarray(m, dtype=float) for k, m in b.matrices().items()}) for b in blocks]
        propagated = propagated_rounding(floats, [(b, float(t)) for b, t in steps], np.asarray(X, dtype=float), unit)
        return EstimatedImage(end=end, estimate=float(max(plain, propagated) if math.isfinite(propagated) else plain),
                              work={})


class Flow(Dynamics):
    """Continuous depth: the flows of the control's steps (:func:`verify.model.flow.flow`)."""

    def end(self, blocks, steps, X, *, dps=None, deadline=math.inf):
        return flow(blocks, steps, X, dps=dps, deadline=deadline).end

    def d_steps(self, blocks, steps, X, *, dps=None, deadline=math.inf):
        return flow(blocks, steps, X, dps=dps, sensitivities=True, deadline=deadline).d_durations

    def estimated_image(self, blocks, steps, X, dps=None, progress=None):
        res = flow(blocks, steps, X, dps=dps, propagate=True, progress=progress)
        return EstimatedImage(end=res.end, estimate=float(res.error_estimate),
                              work={"taylor_steps": res.taylor_steps, "amplification": res.amplification,
                                    "amplifications": res.amplifications})


FINITE = Network(depth="finite", unit="layers")
CONTINUOUS = Flow(depth="continuous", unit="steps")
DEPTHS = {d.depth: d for d in (CONTINUOUS, FINITE)}


def dynamics(depth: str) -> Dynamics:
    """The dynamics of ``depth`` (``"continuous"`` or ``"finite"``)."""
    try:
        return DEPTHS[depth]
    except KeyError:
        raise InputError(f"unknown depth {depth!r}; choose 'continuous' or 'finite'") from None
