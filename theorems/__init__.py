"""Theorem checks (T1 two-block universality, T2 finite depth, T3 causal masking).

Each theorem will get one module here that states it, lists its hypotheses, generates instances
and returns named checks (:class:`verify.reporting.results.Check`); they compose the engine in
``verify/`` and nothing in ``verify/`` imports them.  None exists yet (see the open issues).
"""
