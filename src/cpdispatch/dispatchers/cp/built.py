"""What every CP model offers the front end (`BuiltModel`): the model of one instance, its greedy
plan, hint, search and read-back. It sits above `instance` (pure data), `objectives` and `greedy`,
which the models use."""

from __future__ import annotations

from ortools.sat.python import cp_model

from . import greedy
from .instance import Instance, Plan
from .objectives import Objective


class Model(cp_model.CpModel):
    """CP-SAT's model without the camelCase aliases of every method, which its constructor makes
    by reflection (a third of a millisecond a model, as much as posting a small one); this
    project calls the snake_case methods only."""

    def _add_pre_pep8_methods(self) -> None:
        pass


class ModelTooLarge(ValueError):
    """The allocation part would exceed a model's size guard (pcp20's `max_units` or
    `max_running_boxes`): beyond it CP-SAT does not beat the greedy plan in a decision's time, so
    nothing is solved and the front end enacts that plan."""


class BuiltModel:
    """A CP-SAT model built for one instance, with the hooks the front end needs.

    Builders (`models.hcp.HcpModel`, `models.pcp19.PerNodeModel`, which pcp19 and eurora14 build,
    and `models.pcp20.Pcp20Model`) subclass this: they fill `model` and `start_vars` (one start variable per
    queued job, relative time), and implement `add_hint` (map a complete greedy plan onto *every*
    model variable) and `extract` (read a plan back from a solved model; `complete` may add what is
    derived from it, e.g. pcp20's fluid placements, once for the plan kept rather than at every
    solution found). `until`: the caller needs the nodes of the jobs starting at or before it only
    (the front end: those starting now); None: every job. `goal` is the objective it minimises
    (None: feasibility only).
    """

    def __init__(self, instance: Instance, goal: Objective | None) -> None:
        self.instance = instance
        self.goal = goal
        self.model: cp_model.CpModel = Model()
        self.start_vars: dict[str, cp_model.IntVar] = {}

    def greedy_plan(self, until: int | None = None) -> Plan:
        """The priority-list plan the solver starts from (`greedy.greedy_plan`); a model may
        compute it faster from what it knows of the instance. Raises ValueError if some job fits
        at no time."""
        return greedy.greedy_plan(self.instance)

    def post(self) -> None:
        """Post the variables and constraints if the builder deferred them (pcp20 does, so that
        a greedy plan that starts every job now costs no model); the front end calls it before
        solving (`CpDispatcher.prepare` builds without posting)."""

    def add_hint(self, plan: Plan) -> None:
        raise NotImplementedError

    def extract(self, solver: object) -> Plan:
        raise NotImplementedError

    def complete(self, plan: Plan, until: int | None = None) -> Plan:
        return plan

    def add_search(self) -> None:
        """Optional: post the model's decision strategy (used when the search is 'fixed')."""

    def first_dive(self) -> Plan | None:
        """The first solution of the paper's own search, computed outside the solver (`search=dive`);
        None: the model has none."""
        return None

    @property
    def solver_parameters(self) -> dict[str, object]:
        """CP-SAT parameters this model solves best with; the front end applies them to every solve."""
        return {}

    @property
    def variables(self) -> int:
        return len(self.model.Proto().variables)

    @property
    def constraints(self) -> int:
        return len(self.model.Proto().constraints)
