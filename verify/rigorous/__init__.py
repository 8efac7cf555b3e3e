"""Rigorous replays: enclosures of a witness's image in Arb ball arithmetic (validated flows,
networks in balls) and Krawczyk proofs that exact steps or durations exist."""
