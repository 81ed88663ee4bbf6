"""Constraint-programming dispatchers on OR-Tools CP-SAT.

Layout: `instance` (what a model sees), `frontend` (shared by every CP dispatcher: selection,
priorities, queue length, clamping, time policies, fast path, decision extraction), `greedy`
(priority-list schedule used as hint and fallback), `objectives`, and one module per model family:
`hcp` (HCP'19 and ablation), `pcp19` (PCP'19 and ablation), `pcp20` (the paper's Section 3),
`eurora14` (the 2014 dispatcher).
"""
