"""Constraint-programming dispatchers on OR-Tools CP-SAT.

Layout, from the data up: `instance` (what a model sees: jobs, running jobs, plans), `objectives`
(each objective as an object: expression, value, hint), `greedy` (the priority-list plan used as
hint and fallback), `built` (what a model gives the front end); the front end shared by every CP
dispatcher: `options` (declared once per family), `status` (one per reason a decision ends where
it does), `fitting` (fit-now test, fast path, checked starts), `policies` (time policies with
their options), `solve` (one CP-SAT solve), `frontend` (selection, priorities, queue length, the
one place that skips the solver); and one module per model family: `hcp` (HCP'19 and ablation),
`per_node` and `pcp19` (PCP'19 and ablation), `pcp20` (the paper's Section 3), `eurora14` (the
2014 dispatcher).
"""
