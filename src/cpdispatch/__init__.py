"""cpdispatch: on-line HPC job dispatching with constraint programming."""

__version__ = "0.1.0"
