"""GROUP config resources over a socket: stored with the group's metadata, they survive a restart."""

from __future__ import annotations

from pykbroker.testing import RawClient
from wire import ErrorCode
from wire.messages import DescribeConfigsRequest, IncrementalAlterConfigsRequest
from wire.messages.describe_configs_request import DescribeConfigsResource
from wire.messages.incremental_alter_configs_request import AlterableConfig, AlterConfigsResource

GROUP_RESOURCE, GROUP_CONFIG_SOURCE, DEFAULT_SOURCE = 32, 8, 5


def described(c: RawClient, group: str) -> dict[str, tuple[str, int]]:
    r = c.request(DescribeConfigsRequest(resources=[DescribeConfigsResource(
        resource_type=GROUP_RESOURCE, resource_name=group, configuration_keys=None)]), 4).results[0]
    assert r.error_code == ErrorCode.NONE
    return {e.name: (e.value, e.config_source) for e in r.configs}


def test_group_configs_survive_a_restart(fresh_broker):
    with RawClient(fresh_broker.bootstrap) as c:
        r = c.request(IncrementalAlterConfigsRequest(validate_only=False, resources=[AlterConfigsResource(
            resource_type=GROUP_RESOURCE, resource_name="gc-g", configs=[
                AlterableConfig(name="consumer.session.timeout.ms", config_operation=0, value="50000")])]), 1)
        assert r.responses[0].error_code == ErrorCode.NONE
    fresh_broker.stop()
    fresh_broker.start()
    with RawClient(fresh_broker.bootstrap) as c:
        configs = described(c, "gc-g")
        assert configs["consumer.session.timeout.ms"] == ("50000", GROUP_CONFIG_SOURCE)
        assert configs["consumer.heartbeat.interval.ms"] == ("5000", DEFAULT_SOURCE)
        assert described(c, "gc-other")["consumer.session.timeout.ms"] == ("45000", DEFAULT_SOURCE)


def test_groups_with_configs_are_listed_until_cleared(fresh_broker):
    """Kafka 4.4 lists a GROUP resource while it has configs (4.1 listed it once cleared too)."""
    from wire.messages import AlterConfigsRequest, ListConfigResourcesRequest
    from wire.messages.alter_configs_request import AlterableConfig as Legacy
    from wire.messages.alter_configs_request import AlterConfigsResource as LegacyResource

    with RawClient(fresh_broker.bootstrap) as c:
        for configs in ({"consumer.heartbeat.interval.ms": "6000"}, {}):
            r = c.request(AlterConfigsRequest(validate_only=False, resources=[LegacyResource(
                resource_type=GROUP_RESOURCE, resource_name="gc-listed",
                configs=[Legacy(name=k, value=v) for k, v in configs.items()])]), 2)
            assert r.responses[0].error_code == ErrorCode.NONE
            listed = c.request(ListConfigResourcesRequest(resource_types=[GROUP_RESOURCE]), 1).config_resources
            assert [(x.resource_type, x.resource_name) for x in listed] == ([(GROUP_RESOURCE, "gc-listed")]
                                                                           if configs else [])
