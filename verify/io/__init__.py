"""Input and output: the witness schema, the user's data files, validation of everything a
user hands the engine, safe file access, and the errors a user can fix."""
