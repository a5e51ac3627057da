"""ListConfigResources over a socket: topics, this broker and its loggers; unsupported types refused."""

from __future__ import annotations

from pykbroker.testing import RawClient
from wire import ErrorCode
from wire.messages import CreateTopicsRequest, ListConfigResourcesRequest
from wire.messages.create_topics_request import CreatableTopic


def test_lists_topics_brokers_and_loggers_by_type(fresh_broker):
    with RawClient(fresh_broker.bootstrap) as c:
        c.request(CreateTopicsRequest(topics=[CreatableTopic(name="lcr-t", num_partitions=1, replication_factor=1)],
                                      timeout_ms=5000), 7)
        everything = c.request(ListConfigResourcesRequest(resource_types=[]), 1)
        assert everything.error_code == ErrorCode.NONE
        assert [(r.resource_type, r.resource_name) for r in everything.config_resources] == [
            (8, "1"), (4, "1"), (2, "lcr-t")]
        topics = c.request(ListConfigResourcesRequest(resource_types=[2]), 1).config_resources
        assert [r.resource_name for r in topics] == ["lcr-t"]
        # v0 (ListClientMetricsResources) knows client-metrics resources only; there are none.
        assert c.request(ListConfigResourcesRequest(), 0).config_resources == []
        refused = c.request(ListConfigResourcesRequest(resource_types=[2, 3]), 1)
        assert (refused.error_code, refused.config_resources) == (ErrorCode.UNSUPPORTED_VERSION, [])
