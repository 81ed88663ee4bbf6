"""Driving a real Slurm cluster with cpdispatch dispatchers (the local cluster comes first)."""
