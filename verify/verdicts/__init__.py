"""Verdicts on a witness: its replay with an error estimate (PASS, FAIL, UNDECIDED), the
enclosure of its image in Arb ball arithmetic (CERTIFIED), and Krawczyk proofs that exact
steps or durations exist."""
