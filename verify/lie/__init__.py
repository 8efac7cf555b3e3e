"""The Lie algebra of the two attention fields: the Hall basis, jets, brackets evaluated on a
collection, the invariants and the rank they predict, the rank decision, and its certificates
in rigorous arithmetic."""
