"""ncu-classify: what bounds each GPU kernel, from Nsight Compute hardware counters."""

__version__ = "0.1.0"
