"""The search for a control or network mapping inputs onto targets: the solver and its
settings, Levenberg-Marquardt, multiple shooting and its population, tight pairs,
the finish, pruning, the not-found diagnosis and the shape speed behind it."""
