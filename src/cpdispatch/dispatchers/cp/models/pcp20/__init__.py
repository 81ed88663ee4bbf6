"""PCP'20 (Galleguillos, Kiziltan, Soto, 2020), Section 3: scheduling and allocation in one CP
model whose size does not depend on the number of nodes.

The paper's model from the ground up: `axes` (the ordered list of units of each type), `running`
(what running jobs hold, per type), `job_vars` and `resources` (the variables and constraints),
`model` (the whole model, its search and hooks), `dive` (the first dive of the authors' search).
Ours: `reductions` (the exact reductions, one step before the model), `hints` and `fluid` (a plan
as a hint; fluid jobs' nodes after solving), `relaxed_start` (HCP'19's relaxation shifted onto the
nodes, a second plan to start from), `second_stage` (where the jobs starting now go); `options`
(each option with its paper value) and `dispatcher` (registered as ``pcp20`` when this package is
imported).
Measurement history: docs/pcp20-notes.md.
"""

from ...built import ModelTooLarge
from .axes import Axes, axes_of, spread
from .dispatcher import Pcp20Dispatcher
from .model import Pcp20Model
from .reductions import Fold, Reductions, reductions_of
from .resources import add_no_overlap_2d
from .running import running_usage
from .second_stage import SecondStage

__all__ = [
    "Axes", "Fold", "ModelTooLarge", "Pcp20Dispatcher", "Pcp20Model", "Reductions", "SecondStage",
    "add_no_overlap_2d", "axes_of", "reductions_of", "running_usage", "spread",
]
