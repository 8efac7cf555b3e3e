"""The model and its dynamics: attention blocks, their fields, Taylor series, flows (continuous
depth; many controls in lock step in ``flow_batch``), residual networks (finite depth), the
``dynamics`` interface that serves either depth, RK4 surrogates, the Euler discretisation bound,
and the array backends they all run in."""
