"""The solver's settings: what is asked for, how the search goes, and the defaults per depth.

>>> resolve(Settings(depth="finite")).population
8
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from verify.search.shooting import START_STATES


@dataclass(frozen=True)
class Settings:
    """What the search is asked for and how it searches.  The main options come first
    (tolerance, depth, seed; time_budget below); the fields marked "lm" shape the multiple
    shooting and its population (the name of the one method, kept from when there were four),
    and those left at None take the depth's DEPTH_DEFAULTS (:func:`resolve`).  The defaults are
    measured ones (docs/solver-reach.md, "Measurements behind the solver's constants"); the
    fields stay settable because the reach benchmark's ``plain-lm`` baseline sets them."""

    tolerance: float = 1e-10
    depth: str = "continuous"  # or "finite"
    seed: int = 0
    steps_per_dim: float | None = None  # lm: control length = steps_per_dim * m (None: DEPTH_DEFAULTS)
    segments: int | None = None  # lm: shooting segments (1: single shooting; None: enough for segment_steps each)
    segment_steps: int | None = None  # lm: steps per segment when segments is None (None: DEPTH_DEFAULTS)
    population: int | None = None  # lm: starts fitted in lock step (None: DEPTH_DEFAULTS)
    scale: float = 0.5  # lm: initial durations uniform in [-scale, scale]
    states: str | None = None  # lm: "path" (intermediate states on the straight path X -> Y), "images" (Shooting.fresh),
    # or "mixed" (even starts "path", odd starts "images" with step sizes in [-image_scale, image_scale]); None: DEPTH_DEFAULTS
    image_scale: float = 2.0  # lm, states="mixed": initial step sizes of the "images" starts
    substeps: int = 1  # lm, continuous depth: RK4 steps per control step in the population fit
    max_iter: int | None = None  # lm: Jacobians per start (None: DEPTH_DEFAULTS)
    patience: int = 0  # lm: replace a start whose residual has not halved in this many Jacobians (0: never)
    acceleration: float = 0.75  # lm: geodesic acceleration, largest accepted 2|a|/|v| (0: plain LM steps)
    directions: tuple[str, ...] | None = None  # lm: problems fitted in turn: "forward" (X to Y) and, continuous depth
    # only, "backward" (Y to X, the control then reversed); None: DEPTH_DEFAULTS
    phases: tuple[dict[str, float], ...] | None = None  # lm: searches one after the other, each a dict with its
    # "share" of the time budget (the last takes what is left) and of max_starts, and optionally its own "scale",
    # "image_scale", "states" and (continuous depth) "substeps"; None: DEPTH_DEFAULTS
    max_starts: int = 1_000_000  # lm: random starts per direction (the time budget usually ends them first)
    max_depth: int = 500_000  # steps (continuous) or layers (finite)
    tight_speed: float = 0.05  # lm, finite depth, pairs (n = 2): first expand input pairs slower than this by one
    # large layer (verify.search.pair_expansion), then search from there; 0: never
    time_budget: float = 60.0  # seconds of wall time
    prune: float = 0.0  # seconds (beyond time_budget) of greedy pruning of a found control or network
    # (verify.search.pruning, prune_found); 0: none


# Shooting shape, starts and the two continuous phases were chosen by measurement: docs/solver-reach.md,
# "Measurements behind the solver's constants".
CONTINUOUS_PHASES = ({"share": 1 / 3}, {"share": 2 / 3, "scale": 2.0, "substeps": 2})
PHASE_KEYS = {"share", "scale", "image_scale", "states", "substeps"}
STATES = (*START_STATES, "mixed")  # Settings.states (and a phase's "states")


def valid_phase(phase: dict) -> bool:
    """A phase of ``Settings.phases``: known keys, a positive share, positive scales, known
    states and a whole number of RK4 substeps from 1 to 1024."""
    return (not set(phase) - PHASE_KEYS and phase.get("share", 0) > 0 and phase.get("scale", 1) > 0
            and phase.get("image_scale", 1) > 0 and phase.get("states", "path") in STATES
            and phase.get("substeps", 1) in range(1, 1025))


DEPTH_DEFAULTS = {
    "finite": {"steps_per_dim": 6, "segment_steps": 6, "max_iter": 1000, "population": 8, "states": "mixed",
               "directions": ("forward",), "phases": ({"share": 1.0},)},
    "continuous": {"steps_per_dim": 10, "segment_steps": 6, "max_iter": 300, "population": 16, "states": "mixed",
                   "directions": ("forward", "backward"), "phases": CONTINUOUS_PHASES},
}


def resolve(settings: Settings) -> Settings:
    """``settings`` with the shooting fields left at None filled in from DEPTH_DEFAULTS."""
    defaults = DEPTH_DEFAULTS[settings.depth]
    return replace(settings, **{k: v for k, v in defaults.items() if getattr(settings, k) is None})
