"""The controller's leader and ISR rules, as Kafka's ZooKeeper-era controller applies them."""

from __future__ import annotations

from replication.controller.elections import (
    NO_LEADER,
    LeaderAndIsr,
    directory_offline_change,
    eligible_leader_replicas,
    initial_leader_and_isr,
    offline_partition_election,
    recovered_replica_election,
    remove_replica_from_isr,
)


def test_a_new_partition_is_led_by_its_first_live_replica_with_every_live_replica_in_sync():
    assert initial_leader_and_isr([2, 3, 1], {1, 2, 3}) == LeaderAndIsr(2, 0, (2, 3, 1))
    assert initial_leader_and_isr([2, 3, 1], {1, 3}) == LeaderAndIsr(3, 0, (3, 1))
    assert initial_leader_and_isr([2, 3], {1}) is None


def test_an_offline_partition_elects_the_first_live_in_sync_replica_of_the_assignment():
    current = LeaderAndIsr(1, 4, (1, 3, 2))
    assert offline_partition_election(current, [1, 2, 3], {2, 3}, False) == LeaderAndIsr(2, 5, (3, 2))
    assert offline_partition_election(LeaderAndIsr(1, 4, (1, 3)), [1, 2, 3], {2, 3}, False) == \
        LeaderAndIsr(3, 5, (3,))


def test_without_a_live_in_sync_replica_only_unclean_election_gives_a_leader():
    current = LeaderAndIsr(NO_LEADER, 7, (1,))
    assert offline_partition_election(current, [1, 2, 3], {2, 3}, False) is None
    assert offline_partition_election(current, [1, 2, 3], {2, 3}, True) == LeaderAndIsr(2, 8, (2,), unclean=True)
    assert offline_partition_election(current, [1, 2, 3], {1, 3}, False) == LeaderAndIsr(1, 8, (1,))


def test_an_offline_replica_leaves_the_isr_but_the_last_member_stays():
    assert remove_replica_from_isr(LeaderAndIsr(1, 2, (1, 2, 3)), 3) == LeaderAndIsr(1, 3, (1, 2))
    assert remove_replica_from_isr(LeaderAndIsr(1, 2, (1, 2)), 1) == LeaderAndIsr(NO_LEADER, 3, (2,))
    assert remove_replica_from_isr(LeaderAndIsr(1, 2, (1,)), 1) == LeaderAndIsr(NO_LEADER, 3, (1,))
    assert remove_replica_from_isr(LeaderAndIsr(1, 2, (1, 2)), 3) is None


def test_the_preferred_replica_leads_again_only_when_alive_and_in_sync():
    from replication.controller.elections import preferred_replica_election
    assert preferred_replica_election(LeaderAndIsr(2, 3, (2, 1)), [1, 2], {1, 2}) == LeaderAndIsr(1, 4, (2, 1))
    assert preferred_replica_election(LeaderAndIsr(1, 3, (1, 2)), [1, 2], {1, 2}) is None  # leads already
    assert preferred_replica_election(LeaderAndIsr(2, 3, (2,)), [1, 2], {1, 2}) is None  # not in sync yet
    assert preferred_replica_election(LeaderAndIsr(2, 3, (2, 1)), [1, 2], {2}) is None  # not alive


def test_leader_imbalance_per_broker_as_kafkas_auto_rebalance_counts_it():
    from replication.controller.elections import imbalanced_brokers
    assignments = {("t", p): [1 + p % 3, 1 + (p + 1) % 3] for p in range(30)}  # each broker prefers 10
    leaders = {tp: a[0] for tp, a in assignments.items()}
    assert imbalanced_brokers(leaders, assignments, 10) == {}
    leaders[("t", 0)] = 2  # broker 1 leads 9 of its 10: 10 % is not more than 10 %
    assert imbalanced_brokers(leaders, assignments, 10) == {}
    leaders[("t", 3)] = 2  # now 2 of 10
    assert imbalanced_brokers(leaders, assignments, 10) == {1: [("t", 0), ("t", 3)]}


def test_a_broker_shutting_down_hands_its_leaderships_to_in_sync_replicas_and_leaves_the_isrs():
    from replication.controller.elections import controlled_shutdown_election
    assert controlled_shutdown_election(LeaderAndIsr(1, 4, (1, 2, 3)), [1, 3, 2], {1, 2, 3}, 1) == \
        LeaderAndIsr(3, 5, (2, 3))
    assert controlled_shutdown_election(LeaderAndIsr(1, 4, (1,)), [1, 2], {1, 2}, 1) is None  # nobody in sync
    assert controlled_shutdown_election(LeaderAndIsr(2, 4, (2, 1)), [2, 1], {1, 2}, 1) == LeaderAndIsr(2, 5, (2,))
    assert controlled_shutdown_election(LeaderAndIsr(2, 4, (2,)), [2, 1], {1, 2}, 1) is None  # not in the ISR


def test_a_replica_whose_log_dir_goes_offline_leaves_the_isr_and_the_lead():
    # The leader's dir fails: the next live in-sync replica leads, the failed one leaves the ISR.
    assert directory_offline_change(LeaderAndIsr(1, 4, (1, 2, 3)), [1, 2, 3], {1, 2, 3}, 1, True) == \
        LeaderAndIsr(2, 5, (2, 3))
    # A follower's: only the ISR changes (with a new epoch, as every controller change).
    assert directory_offline_change(LeaderAndIsr(1, 4, (1, 2)), [1, 2], {1, 2}, 2, True) == LeaderAndIsr(1, 5, (1,))
    # The last member: no leader; with ELR it leaves the ISR (it stays eligible), without it stays.
    assert directory_offline_change(LeaderAndIsr(1, 0, (1,)), [1], {1}, 1, True) == LeaderAndIsr(NO_LEADER, 1, ())
    assert directory_offline_change(LeaderAndIsr(1, 0, (1,)), [1], {1}, 1, False) == LeaderAndIsr(NO_LEADER, 1, (1,))
    # Already out: nothing to change.
    assert directory_offline_change(LeaderAndIsr(NO_LEADER, 1, ()), [1], {1}, 1, True) is None


def test_a_recovered_last_eligible_replica_leads_again():
    assert recovered_replica_election(LeaderAndIsr(NO_LEADER, 1, ()), [1], 1) == LeaderAndIsr(1, 2, (1,))
    assert recovered_replica_election(LeaderAndIsr(NO_LEADER, 1, (1,)), [1], 1) == LeaderAndIsr(1, 2, (1,))
    assert recovered_replica_election(LeaderAndIsr(1, 1, (1,)), [1], 1) is None  # it leads already
    assert recovered_replica_election(LeaderAndIsr(NO_LEADER, 1, (2,)), [1, 2], 1) is None  # 2 should lead
    assert recovered_replica_election(LeaderAndIsr(NO_LEADER, 1, ()), [2], 1) is None  # not a replica here


def test_replicas_leaving_the_isr_below_min_isr_stay_eligible_with_elr():
    assert eligible_leader_replicas((1,), (), (), 1, True) == (1,)
    assert eligible_leader_replicas((1, 2, 3), (2, 3), (), 2, True) == ()  # still at min.insync.replicas
    assert eligible_leader_replicas((1, 2), (2,), (3,), 2, True) == (3, 1)
    assert eligible_leader_replicas((1,), (), (), 1, False) == ()  # ELR off
