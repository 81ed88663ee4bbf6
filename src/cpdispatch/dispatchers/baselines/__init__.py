"""The baseline dispatchers, without a solver: queue order (`queue_order`: fifo, sjf, ljf), EASY
backfilling (`easy`), conservative backfilling (`conservative`), Slurm's backfill
(`slurm_backfill`) and a PBS-like dispatcher (`pbs`); with what they share: the queue views
(`queue_cache`), the in-order greedy pass (`greedy_pass`) and the numba-compiled backfilling
passes (`easy_kernel`, `profile_kernel`).
"""
