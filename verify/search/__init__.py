"""The search for a control or network mapping inputs onto targets: the solver and its
settings, Levenberg-Marquardt, multiple shooting, steering, tight pairs, the finish, pruning,
and the shape speed behind the not-found diagnosis."""
