"""Reporting: named checks, the deterministic report, the summary, the LaTeX appendix and its
figures, and the engine's self-checks."""
