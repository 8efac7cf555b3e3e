"""Sweeps: many independent work units (reach instances, theorem checks) run in-process or on
Dask, journalled so that an interrupted sweep resumes (unit, journal, records, runner)."""
