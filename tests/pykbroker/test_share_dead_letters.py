"""The share groups' dead-letter queue (KIP-1191): when it is on, and Kafka 4.4's reasons for not writing."""

from __future__ import annotations

from pykbroker.share_dead_letters import ShareGroupDeadLetters


def _dlq(*, share_version: int = 2, topics=None, auto_create: bool = False, prefix: str = "dlq.",
         group_configs=None) -> ShareGroupDeadLetters:
    topics = topics or {}
    broker = {"errors.deadletterqueue.auto.create.topics.enable": auto_create,
              "errors.deadletterqueue.topic.name.prefix": prefix}

    async def never(*args):
        raise AssertionError("nothing is written in these tests")

    return ShareGroupDeadLetters(
        config=broker.__getitem__, group_configs=lambda g: (group_configs or {}).get(g, {}),
        share_version=lambda: share_version,
        topic=lambda name: (1, topics[name], lambda p: 1) if name in topics else None,
        create_topic=never, produce=never, read=lambda *a: b"")


def test_on_with_share_version_2_and_a_dlq_topic_name():
    named = {"g": {"errors.deadletterqueue.topic.name": "dlq.t"}, "blank": {"errors.deadletterqueue.topic.name": " "}}
    assert _dlq(group_configs=named).enabled("g")
    assert not _dlq(group_configs=named, share_version=1).enabled("g")
    assert not _dlq(group_configs=named).enabled("blank") and not _dlq(group_configs=named).enabled("other")


def test_a_topic_that_cannot_be_the_dlq_is_refused_with_kafkas_reason():
    enabled = {"errors.deadletterqueue.group.enable": "true"}
    assert _dlq()._check_topic("g", "__t") == "Configured DLQ topic name in share group: g cannot start with __, topic: __t."
    assert _dlq(topics={"dlq.off": {}})._check_topic("g", "dlq.off") == (
        "DLQ is not enabled on configured DLQ topic for share group: g, topic: dlq.off.")
    assert _dlq()._check_topic("g", "dlq.none") == (
        "DLQ topic does not exist and auto create is disabled on cluster for share group: g, topic: dlq.none.")
    assert _dlq(topics={"other": enabled})._check_topic("g", "other") == (
        "Configured DLQ topic name does not comply with the DLQ topic prefix in share group: g, topic: other, "
        "prefix: dlq..")  # Kafka's format ends the prefix with its full stop
    assert _dlq(topics={"other": enabled}, prefix="")._check_topic("g", "other") is None
    assert _dlq(auto_create=True)._check_topic("g", "dlq.new") is None
