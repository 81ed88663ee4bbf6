"""A simulation from Python: a generated Eurora-like workload under pcp20, then the tables."""

import cpdispatch as cpd

system = cpd.System.preset("eurora")
jobs = cpd.generate_eurora(600, seed=1)
result = cpd.simulate(system, jobs, dispatcher="pcp20", predictor="last2",
                      options={"fast_budget": 0.01}, load_factor=3.0)
print(result.summary["avg_wait"], result.summary["avg_bounded_slowdown"])
print(result.jobs[["job_id", "submit", "start", "nodes"]].head())
print(result.decisions["status"].value_counts())
result.save("out/quickstart")
