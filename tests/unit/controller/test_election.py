"""Leader election rules: AR order, ISR, unclean, preferred, controlled shutdown, offline."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from minikafka.controller.election import (
    LeaderAndIsr,
    controlled_shutdown_leader,
    offline_leader,
    preferred_leader,
    remove_replica_from_isr,
)


class TestOfflineLeader:
    def test_first_live_isr_member_in_assignment_order(self) -> None:
        # AR order decides, not ISR order
        assert offline_leader((1, 2, 3), isr=(3, 2), live={2, 3}) == LeaderAndIsr(2, (3, 2))

    def test_dead_replicas_leave_the_isr(self) -> None:
        assert offline_leader((1, 2, 3), isr=(1, 2, 3), live={2, 3}) == LeaderAndIsr(2, (2, 3))

    def test_live_replica_outside_the_isr_is_not_a_candidate(self) -> None:
        assert offline_leader((1, 2, 3), isr=(1, 3), live={2, 3}) == LeaderAndIsr(3, (3,))

    def test_no_live_isr_member_means_offline(self) -> None:
        assert offline_leader((1, 2, 3), isr=(1,), live={2, 3}) is None

    def test_unclean_elects_first_live_replica_alone(self) -> None:
        result = offline_leader((1, 2, 3), isr=(1,), live={3, 2}, unclean=True)
        assert result == LeaderAndIsr(2, (2,))

    def test_unclean_still_prefers_a_clean_candidate(self) -> None:
        result = offline_leader((1, 2, 3), isr=(1, 3), live={2, 3}, unclean=True)
        assert result == LeaderAndIsr(3, (3,))

    def test_nothing_alive_even_unclean(self) -> None:
        assert offline_leader((1, 2), isr=(1, 2), live=set(), unclean=True) is None


class TestPreferredLeader:
    def test_first_assigned_replica_when_alive_and_in_sync(self) -> None:
        assert preferred_leader((2, 1), isr=(1, 2), live={1, 2}) == LeaderAndIsr(2, (1, 2))

    def test_not_in_isr(self) -> None:
        assert preferred_leader((2, 1), isr=(1,), live={1, 2}) is None

    def test_not_alive(self) -> None:
        assert preferred_leader((2, 1), isr=(1, 2), live={1}) is None

    def test_empty_assignment(self) -> None:
        assert preferred_leader((), isr=(), live={1}) is None


class TestControlledShutdownLeader:
    def test_moves_to_the_next_isr_member_and_drops_the_shutting_broker(self) -> None:
        result = controlled_shutdown_leader((1, 2, 3), (1, 2, 3), {1, 2, 3}, shutting_down={1})
        assert result == LeaderAndIsr(2, (2, 3))

    def test_skips_members_outside_the_isr(self) -> None:
        result = controlled_shutdown_leader((1, 2, 3), (1, 3), {1, 2, 3}, shutting_down={1})
        assert result == LeaderAndIsr(3, (3,))

    def test_no_other_isr_member(self) -> None:
        assert controlled_shutdown_leader((1, 2), (1,), {1, 2}, shutting_down={1}) is None

    def test_two_brokers_shutting_down(self) -> None:
        result = controlled_shutdown_leader((1, 2, 3), (1, 2, 3), {1, 2, 3}, shutting_down={1, 2})
        assert result == LeaderAndIsr(3, (3,))


class TestRemoveReplicaFromIsr:
    def test_follower_leaves_the_isr(self) -> None:
        assert remove_replica_from_isr(1, (1, 2, 3), 2) == LeaderAndIsr(1, (1, 3))

    def test_leader_leaves_lead_and_isr(self) -> None:
        assert remove_replica_from_isr(1, (1, 2), 1) == LeaderAndIsr(-1, (2,))

    def test_last_isr_member_stays(self) -> None:
        assert remove_replica_from_isr(1, (1,), 1) == LeaderAndIsr(-1, (1,))

    def test_replica_outside_the_isr_changes_nothing_but_leadership(self) -> None:
        assert remove_replica_from_isr(2, (2, 3), 1) == LeaderAndIsr(2, (2, 3))


@given(
    assignment=st.lists(st.integers(0, 6), min_size=1, max_size=5, unique=True),
    data=st.data(),
)
def test_offline_leader_invariants(assignment: list[int], data: st.DataObject) -> None:
    isr = data.draw(st.lists(st.sampled_from(assignment), unique=True))
    live = set(data.draw(st.lists(st.integers(0, 6), unique=True)))
    clean = offline_leader(assignment, isr, live)
    if clean is not None:
        assert clean.leader in live and clean.leader in isr
        assert set(clean.isr) == set(isr) & live
        # nobody earlier in AR order qualified
        earlier = assignment[: assignment.index(clean.leader)]
        assert not any(r in live and r in isr for r in earlier)
    else:
        assert not set(isr) & live
        unclean = offline_leader(assignment, isr, live, unclean=True)
        if unclean is not None:
            assert unclean.isr == (unclean.leader,)
            assert unclean.leader == next(r for r in assignment if r in live)
        else:
            assert not set(assignment) & live
