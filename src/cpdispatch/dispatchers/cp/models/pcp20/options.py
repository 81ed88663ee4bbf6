"""pcp20's own options, each declared once with its default and paper value: the model's variants
and size guards (read by `model.Pcp20Model`), the second stage and the relaxation's starting plan
(read by the dispatcher)."""

from __future__ import annotations

from ...options import family, option


@family
class Pcp20Options:
    """pcp20's own: the model's variants and size guards, the second stage, the starting plan."""

    # Sect. 3: all different positions per job, and the implied cumulative per type
    all_different: bool = option(False, "the paper's all-different on unit positions instead of ordered units",
                                 paper=True)
    implied_cumulative: bool = option(True, "post the implied cumulative per resource type", paper=True)
    sparse_domains: bool = option(False, "exact no-straddling domains on positions (redundant; slower presolve)",
                                  paper=False)
    # the paper's model: no dropped, folded or fluid types, and no size guard
    reductions: bool = option(True, "exact reductions: drop types that cannot bind; a cumulative instead of a "
                                    "NoOverlap2D on 1-unit types (false: the paper's model)", paper=False)
    max_units: int = option(128, "most units with positions in a model, else the greedy plan (0: no limit)",
                            paper=0)
    max_running_boxes: int = option(0, "most fixed running boxes in a model, else the greedy plan (0: no limit)",
                                    paper=0)
    hint_replay: bool = option(True, "on models of fluid types only, CP-SAT follows the hint before its search "
                                     "(its default; with boxes it never does). false: faster on congested "
                                     "HPC2N, slightly longer waits of its short jobs (docs/pcp20-notes.md)")
    # the second stage is ours, and so is the relaxation's starting plan
    stage2: int = option(4, "second stage: re-place the jobs starting now, in a model with this many of the "
                            "queued jobs that do not start, when that lets one start earlier (0: off)", paper=0)
    stage2_budget: float = option(0.005, "second stage: CP-SAT deterministic-time budget per solve (two at most)")
    relaxed_start: float = option(0.005, "when the model places units or is over its size guard: first solve "
                                         "HCP's relaxation (one cumulative per type on the totals) for this "
                                         "deterministic time, shift its plan onto the nodes and start from it if "
                                         "better than the greedy plan (0: off)", paper=0.0)

