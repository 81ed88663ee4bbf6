"""The driver's Prometheus metrics (`--metrics-port`), with the official client library: what an
operator alerts on (rounds that stop, a lease growing old, refusals) and what a dashboard shows
(round latency per part, queue length, starts)."""

from __future__ import annotations

import time

from ..errors import CpdispatchError
from .figures import RoundFigures

#: Round parts take from milliseconds (deciding an idle queue) to seconds (reading a loaded slurmctld).
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class Metrics:
    """Served on `port` (all interfaces unless `address`) from a registry of its own."""

    def __init__(self, port: int, address: str = "0.0.0.0") -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

        reg = self.registry = CollectorRegistry()
        self.rounds = Counter("cpdispatch_rounds", "Rounds the driver completed", registry=reg)
        self.failed_reads = Counter("cpdispatch_failed_reads", "Rounds skipped: Slurm did not answer",
                                    registry=reg)
        self.seconds = Histogram("cpdispatch_round_seconds", "Time per part of a round (read, decide, apply)",
                                 ["part"], buckets=BUCKETS, registry=reg)
        self.queue = Gauge("cpdispatch_queue_jobs", "Jobs offered to the dispatcher in the last round", registry=reg)
        self.running = Gauge("cpdispatch_running_jobs", "Running jobs in the last round", registry=reg)
        self.committed = Gauge("cpdispatch_committed_jobs", "Released jobs not yet running", registry=reg)
        self.jobs = Counter("cpdispatch_jobs", "Jobs per action: started, reheld, adjusted, refused, failed, taken",
                            ["action"], registry=reg)
        self.renewed = 0.0
        lease = Gauge("cpdispatch_lease_age_seconds", "Seconds since this driver last renewed its lease "
                      "(-1: it writes none)", registry=reg)
        lease.set_function(lambda: time.time() - self.renewed if self.renewed else -1.0)
        try:
            start_http_server(port, addr=address, registry=reg)
        except OSError as exc:
            raise CpdispatchError(f"--metrics-port {port}: cannot listen ({exc.strerror})") from None

    def observe(self, fig: RoundFigures) -> None:
        self.rounds.inc()
        for part, value in (("read", fig.read_s), ("decide", fig.decide_s), ("apply", fig.apply_s)):
            self.seconds.labels(part).observe(value)
        self.queue.set(fig.queued)
        self.running.set(fig.running)
        self.committed.set(fig.committed)
        for action, ids in fig.actions().items():
            if ids:
                self.jobs.labels(action).inc(len(ids))
