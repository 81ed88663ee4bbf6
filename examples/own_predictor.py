"""A predictor of one's own: any object with predict(job, now) (and observe, to learn on-line)."""

import cpdispatch as cpd


class HalfWalltime:
    """Users overestimate: plan with half the requested time."""

    def predict(self, job, now):
        return max(1, job.estimate // 2)

    def observe(self, job, runtime, now):
        pass


system = cpd.System.preset("eurora")
jobs = cpd.generate_eurora(400, seed=2)
result = cpd.simulate(system, jobs, dispatcher="easy", predictor=HalfWalltime(), load_factor=3.0)
print(result.summary["predictor"], result.summary["avg_wait"])
