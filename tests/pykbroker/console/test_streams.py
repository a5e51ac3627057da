"""``console.streams``: a StreamsGroupDescribe answer as the page shows it (the browser test with a real
Kafka Streams application is ``test_streams_console.py``, in ``make test-console-slow``)."""

from __future__ import annotations

from pykbroker.console.streams import streams_group_json
from wire.messages import streams_group_describe_response as sgd


def group(topology_epoch: int = 1, member_epoch: int = 1) -> sgd.DescribedGroup:
    changelog = sgd.TopicInfo(name="app-store-changelog", partitions=4)
    repartition = sgd.TopicInfo(name="app-repartition", partitions=4)
    topology = sgd.Topology(epoch=1, subtopologies=[
        sgd.Subtopology(subtopology_id="1", source_topics=["app-repartition"], state_changelog_topics=[changelog]),
        sgd.Subtopology(subtopology_id="0", source_topics=["in"], repartition_sink_topics=["app-repartition"],
                        repartition_source_topics=[repartition])])
    member = sgd.Member(
        member_id="m1", member_epoch=member_epoch, client_id="c", client_host="/127.0.0.1", topology_epoch=topology_epoch,
        process_id="p-1", user_endpoint=sgd.Endpoint(host="h", port=1),
        task_offsets=[sgd.TaskOffset(subtopology_id="0", partition=1, offset=5)],
        task_end_offsets=[sgd.TaskOffset(subtopology_id="0", partition=1, offset=12)],
        assignment=sgd.Assignment(active_tasks=[sgd.TaskIds(subtopology_id="0", partitions=[3, 1])],
                                  standby_tasks=[sgd.TaskIds(subtopology_id="1", partitions=[0])]),
        target_assignment=sgd.Assignment(active_tasks=[sgd.TaskIds(subtopology_id="0", partitions=[1])]))
    return sgd.DescribedGroup(group_id="app", group_state="Stable", group_epoch=3, assignment_epoch=3,
                              topology=topology, members=[member])


def test_members_tasks_topology_and_task_lag():
    d = streams_group_json(group(), {"in", "app-repartition", "app-store-changelog"})
    [m] = d["members"]
    assert (m["process_id"], m["endpoint"]) == ("p-1", "h:1")
    assert m["tasks"] == {"active": [{"subtopology": "0", "partitions": [1, 3]}],
                          "standby": [{"subtopology": "1", "partitions": [0]}], "warmup": []}
    assert m["target"]["active"] == [{"subtopology": "0", "partitions": [1]}]
    assert m["task_lag"] == [{"subtopology": "0", "partition": 1, "offset": 5, "end": 12, "lag": 7}]
    assert [s["id"] for s in d["topology"]["subtopologies"]] == ["0", "1"]
    assert d["topology"]["status"] == "ready" and d["topology"]["ready"]


def test_topology_status_names_what_is_not_ready():
    assert streams_group_json(group(), {"in"})["topology"]["status"] == (
        "not ready: internal topics not created yet (app-repartition, app-store-changelog)")
    behind = streams_group_json(group(topology_epoch=0), {"in", "app-repartition", "app-store-changelog"})
    assert behind["topology"]["status"] == "1 member(s) still on an older topology epoch"
    none = streams_group_json(sgd.DescribedGroup(group_id="app", group_state="NotReady", topology=None, members=[]),
                              set())
    assert none["topology"]["status"] == "no topology yet: no member has sent one" and not none["topology"]["ready"]
