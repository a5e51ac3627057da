"""Group configs (KIP-848 GROUP resources): Kafka's checks, defaults from the broker, and their effect on a
consumer group's sessions and heartbeat intervals."""

from __future__ import annotations

import itertools
import uuid

import pytest

from coordinator.group import GroupCoordinator
from coordinator.group.group_config import GroupConfigError, GroupConfigs, defaults, validate
from pykbroker.config import Config
from tests.coordinator.group.helpers import CONFIG, Harness, info, run
from tests.coordinator.group.test_consumer_protocol import hb, join
from wire import ErrorCode

BROKER = Config({})


def broker(name: str):
    return BROKER[name]


def test_defaults_come_from_the_broker():
    d = defaults(broker)
    assert d["consumer.session.timeout.ms"] == "45000" and d["consumer.heartbeat.interval.ms"] == "5000"
    assert d["share.auto.offset.reset"] == "latest" and d["streams.num.standby.replicas"] == "0"
    custom = Config({"group.consumer.session.timeout.ms": "50000"})
    assert defaults(lambda n: custom[n])["consumer.session.timeout.ms"] == "50000"


@pytest.mark.parametrize("configs, message", [
    ({"nope": "1"}, "Unknown group config name: nope"),
    ({"consumer.session.timeout.ms": "x"}, "Invalid value x for configuration consumer.session.timeout.ms: "
     "Not a number of type INT"),
    ({"consumer.session.timeout.ms": "1000"}, "consumer.session.timeout.ms must be in the range 45000 to 60000 "
     "inclusive."),
    ({"consumer.heartbeat.interval.ms": "20000"}, "consumer.heartbeat.interval.ms must be in the range 5000 to 15000 "
     "inclusive."),
    ({"streams.num.standby.replicas": "3"}, "streams.num.standby.replicas must be less than or equal to 2"),
    # Kafka 4.4's additions (messages as a 4.4 broker answers them)
    ({"consumer.assignment.interval.ms": "-1"}, "Invalid value -1 for configuration consumer.assignment.interval.ms: "
     "Value must be at least 0"),
    ({"consumer.assignment.interval.ms": "99999"}, "consumer.assignment.interval.ms must be in the range 0 to 15000 "
     "inclusive."),
    ({"share.delivery.count.limit": "11"}, "share.delivery.count.limit must be in the range 2 to 10 inclusive."),
    ({"share.partition.max.record.locks": "99"}, "Invalid value 99 for configuration "
     "share.partition.max.record.locks: Value must be at least 100"),
    ({"share.renew.acknowledge.enable": "maybe"}, "Invalid value maybe for configuration "
     "share.renew.acknowledge.enable: Expected value to be either true or false"),
    ({"streams.assignor.name": "nope"}, "streams.assignor.name 'nope' is not a registered task assignor. Registered "
     "assignors are: [sticky]."),
    ({"share.isolation.level": "none"}, "Invalid value none for configuration share.isolation.level: String must be "
     "one of: read_committed, read_uncommitted"),
])
def test_refusals_carry_kafkas_messages(configs, message):
    with pytest.raises(GroupConfigError) as err:
        validate(configs, broker)
    assert (err.value.code, err.value.message) == (40, message)


def test_the_session_must_outlast_the_heartbeat_and_bounds_follow_the_broker():
    wide = Config({"group.consumer.min.session.timeout.ms": "1000", "group.consumer.min.heartbeat.interval.ms": "1000"})
    validate({"consumer.session.timeout.ms": "2000", "consumer.heartbeat.interval.ms": "1000"}, lambda n: wide[n])
    with pytest.raises(GroupConfigError, match="consumer.session.timeout.ms must be greater than "
                                               "consumer.heartbeat.interval.ms"):
        validate({"consumer.session.timeout.ms": "1000", "consumer.heartbeat.interval.ms": "1000"}, lambda n: wide[n])
    validate({"share.auto.offset.reset": "by_duration:P1DT2H"}, broker)


@run
async def test_a_groups_configs_time_its_members_and_set_their_heartbeat_interval():
    stored: dict[str, dict[str, str]] = {"cg": {"consumer.session.timeout.ms": "50000",
                                                "consumer.heartbeat.interval.ms": "6000"}}
    h = Harness()
    counter = itertools.count(1)
    h.coordinator = GroupCoordinator(CONFIG, node_id=1, topics=h.topics, log_factory=h.logs, clock=h.clock,
                                     new_uuid=lambda: uuid.UUID(int=next(counter)),
                                     group_configs=GroupConfigs(lambda: stored, broker))
    c = h.coordinator
    first = await c.consumer_group_heartbeat(info(1), join("m1"))
    assert first.heartbeat_interval_ms == 6000
    await h.advance(46_000)  # past the broker's 45 s, within the group's 50 s
    alive = await c.consumer_group_heartbeat(info(1), hb("m1", first.member_epoch))
    assert alive.error_code == ErrorCode.NONE
    await h.advance(50_001)
    gone = await c.consumer_group_heartbeat(info(1), hb("m1", first.member_epoch))
    assert gone.error_code == ErrorCode.UNKNOWN_MEMBER_ID
    stored.clear()  # deleted: the broker's defaults again, from the next heartbeat on
    again = await c.consumer_group_heartbeat(info(1), join("m1"))
    assert again.heartbeat_interval_ms == 5000
    await c.close()
