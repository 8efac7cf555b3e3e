"""The model and its dynamics: attention blocks, their fields, Taylor series, flows (continuous
depth), residual networks (finite depth), RK4 surrogates, the Euler discretisation bound, and
the array backends they all run in."""
