"""Constraint-programming dispatchers on OR-Tools CP-SAT.

Layout, from the data up: `instance` (what a model sees: jobs, running jobs, plans), `objectives`
(each objective as an object: expression, value, hint), `greedy` (the priority-list plan used as
hint and fallback), `built` (what a model gives the front end). The front end shared by every CP
dispatcher, read as its pipeline: `options` and `option_sets` (each option declared once, with its
paper value), `profiles` (applies `profile=paper`), `priorities`, `selection`, `fitting` (fit-now
test, fast path, checked starts), `policies` (time policies with their options), `solve` (one
CP-SAT solve), `status` and `outcome` (how a decision ends), `frontend` (the pipeline). The models
are below it in `models/`, one package each (`hcp`, `pcp19`, `eurora14`, `pcp20`).
"""
