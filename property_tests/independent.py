"""The independent replay, as the tests import it: :mod:`verify_replay` (shares no code with ``verify``)."""

from verify_replay import dumps, extrapolated_flow, field, flow, network, replay, witness

__all__ = ["dumps", "extrapolated_flow", "field", "flow", "network", "replay", "witness"]
