"""Allocations are kept per node, not per unit; they must read back unit by unit unchanged."""

from hypothesis import given
from hypothesis import strategies as st

from cpdispatch.snapshot import Allocation


@given(st.lists(st.integers(0, 20), max_size=60))
def test_allocation_keeps_the_units_of_every_node(per_unit: list[int]) -> None:
    a = Allocation.of_units(per_unit)
    assert a.units == len(per_unit)
    assert list(a.nodes) == sorted(set(per_unit))
    assert all(c == per_unit.count(n) for n, c in zip(a.nodes, a.counts))
    assert a.per_unit() == tuple(sorted(per_unit))
    assert Allocation.of_units(a.per_unit()) == a


def test_a_wide_job_costs_its_nodes_not_its_units() -> None:
    a = Allocation.of_units([k // 16 for k in range(80_000)])  # CEA-Curie's widest: 80k cores
    assert len(a.nodes) == len(a.counts) == 5_000 and set(a.counts) == {16}
