"""The rest of the cluster in the overview: what this broker's own state cannot tell, asked of the others as
the logged-in user, so any broker's console shows the whole cluster.

``overview()`` reads this broker's replica manager and group coordinator: it knows the partitions hosted
here and the groups coordinated here. For every other partition, ListOffsets to its leader gives the log
start offset and high watermark and DescribeLogDirs to the leader its size (when the principal may describe
the cluster; otherwise the size stays unknown); the groups other brokers coordinate are described through
their coordinators (``admin.describe_group``, at most MAX_REMOTE_GROUPS of them); and lag on partitions led elsewhere is the high watermark
so learnt minus the committed offset. Remote (tiered) sizes are those this broker's remote log metadata
knows (the partitions it leads, and those whose __remote_log_metadata partition it replays); for the others
the leader tells how many records are remote (ListOffsets v9: from the log start offset to the latest tiered
offset), as no Kafka request answers a partition's remote bytes (DescribeLogDirs v0-5 sizes are local logs').
"""

from __future__ import annotations

import asyncio
from typing import Any

from pykbroker.console.admin import describe_group
from pykbroker.console.kafka import KafkaSession, RequestError
from pykbroker.console.messages import LATEST_TIERED, end_offsets, list_offsets
from wire import ErrorCode
from wire.messages import DescribeLogDirsRequest
from wire.messages.describe_log_dirs_request import DescribableLogDirTopic

__all__ = ["MAX_REMOTE_GROUPS", "complete_overview"]

# Groups coordinated elsewhere described per overview (each is a few requests; the page polls every 2 s): the
# others are listed with their state, their members and lag on their own page.
MAX_REMOTE_GROUPS = 50


async def _sizes(session: KafkaSession, leader: int, wanted: dict[str, list[int]]) -> dict[tuple[str, int], int]:
    """{(topic, partition): bytes} of ``wanted`` on ``leader`` (DescribeLogDirs); {} when refused."""
    try:
        answer = await session.request(DescribeLogDirsRequest(topics=[
            DescribableLogDirTopic(topic=t, partitions=sorted(ps)) for t, ps in sorted(wanted.items())]), leader)
    except (RequestError, OSError):
        return {}
    if answer.error_code != ErrorCode.NONE:
        return {}
    return {(t.name, p.partition_index): p.partition_size for r in answer.results if r.error_code == ErrorCode.NONE
            for t in r.topics for p in t.partitions if not p.is_future_key}


async def _offsets(session: KafkaSession, topic: dict[str, Any], missing: list[dict[str, Any]]) -> None:
    try:
        bounds = await end_offsets(session, topic["name"], {p["partition"]: p["leader"] for p in missing})
    except (RequestError, OSError):
        return  # a leader that cannot answer now: unknown until the next refresh
    for p in missing:
        p["log_start_offset"], p["high_watermark"] = bounds[p["partition"]]
        p["log_end_offset"] = p["high_watermark"]  # what a client may learn of another broker's log end


async def _remote_records(session: KafkaSession, topic: str, parts: list[dict[str, Any]]) -> None:
    """``remote_records`` of ``parts`` (tiered, remote bytes unknown here): the offsets from the log start to
    the latest tiered offset, from their leaders; left None when a leader does not answer."""
    try:
        tiered = await list_offsets(session, topic, {p["partition"]: p["leader"] for p in parts}, LATEST_TIERED)
    except (RequestError, OSError):
        return
    for p in parts:
        last = tiered.get(p["partition"], -1)
        p["remote_records"] = max(0, last - p["log_start_offset"] + 1) if last >= 0 else 0


async def complete_overview(session: KafkaSession, data: dict[str, Any], node_id: int, listed: list[dict[str, Any]]) -> None:
    """Fill ``data`` (an overview already cut to the user's topics and groups) with the partitions and groups
    this broker (``node_id``) does not host; ``listed``: the user's ListGroups answer (``admin.list_groups``)."""
    missing = {t["name"]: [p for p in t["partitions"] if p["log_end_offset"] is None and p["leader"] >= 0]
               for t in data["topics"]}
    topics = {t["name"]: t for t in data["topics"]}
    await asyncio.gather(*(_offsets(session, topics[name], parts) for name, parts in missing.items() if parts))
    tiered = {t["name"]: [p for p in t["partitions"] if p["remote_size"] is None and p["leader"] >= 0
                          and p["log_start_offset"] is not None]
              for t in data["topics"] if str(t["configs"].get("remote.storage.enable", "")).lower() == "true"}
    await asyncio.gather(*(_remote_records(session, name, parts) for name, parts in tiered.items() if parts))
    by_leader: dict[int, dict[str, list[int]]] = {}
    for name, parts in missing.items():
        for p in parts:
            by_leader.setdefault(p["leader"], {}).setdefault(name, []).append(p["partition"])
    sizes: dict[tuple[str, int], int] = {}
    for found in await asyncio.gather(*(_sizes(session, leader, wanted) for leader, wanted in by_leader.items())):
        sizes.update(found)
    for name, parts in missing.items():
        for p in parts:
            p["size"] = sizes.get((name, p["partition"]))
    for t in data["topics"]:
        known = [p for p in t["partitions"] if p["log_end_offset"] is not None]
        t["size"] = sum(p["size"] or 0 for p in known)
        t["messages"] = sum(p["log_end_offset"] - p["log_start_offset"] for p in known)
    ends = {(t["name"], p["partition"]): p["high_watermark"] for t in data["topics"] for p in t["partitions"]
            if p["high_watermark"] is not None}
    for g in data["groups"]:  # coordinated here; lag on partitions led elsewhere from the ends just learnt
        for o in g["offsets"]:
            if o["lag"] is None and (o["topic"], o["partition"]) in ends:
                o["lag"] = max(ends[(o["topic"], o["partition"])] - o["committed"], 0)
        g["lag"] = sum(o["lag"] for o in g["offsets"] if o["lag"] is not None)
    kinds = {g["group_id"]: g["type"] for g in listed}
    for g in data["groups"]:  # the type ListGroups answers (classic, consumer, share), which links to the group page
        g["type"] = kinds.get(g["group_id"], g["type"])
    here = {g["group_id"] for g in data["groups"]}
    others = [g for g in listed if g["group_id"] not in here]

    async def described(g: dict[str, Any], i: int) -> dict[str, Any]:
        if i >= MAX_REMOTE_GROUPS:
            return {"group_id": g["group_id"], "type": g["type"], "state": g["state"], "members": [], "offsets": [],
                    "lag": None, "protocol_type": g["protocol_type"], "coordinator": g["coordinator"],
                    "error": f"more than {MAX_REMOTE_GROUPS} groups on other brokers: see the group's own page"}
        try:
            d = await describe_group(session, g["group_id"], g["type"])
        except (RequestError, OSError) as exc:
            d = {"group_id": g["group_id"], "type": g["type"], "state": g["state"], "members": [], "offsets": [],
                 "lag": None, "error": str(exc)}
        return {**d, "protocol_type": g["protocol_type"], "coordinator": g["coordinator"]}

    data["groups"] = sorted(data["groups"] + list(await asyncio.gather(*(described(g, i) for i, g in enumerate(others)))),
                            key=lambda g: g["group_id"])
    for g in data["groups"]:
        g.setdefault("coordinator", node_id)
