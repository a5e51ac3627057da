"""Kafka's topic-name rules (org.apache.kafka.common.internals.Topic)."""

from __future__ import annotations

import re

MAX_NAME_LENGTH = 249
_LEGAL = re.compile(r"[a-zA-Z0-9._-]+")
#: The topics Kafka itself keeps (Topic.isInternal): group offsets, transaction state, share-group state.
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})


def topic_name_error(name: str) -> str | None:
    """Why ``name`` is not a legal topic name (Kafka 4.4's wording), or None when it is."""
    reason = None
    if not name:
        reason = "the empty string is not allowed"
    elif name in (".", ".."):
        reason = f"'{name}' is not allowed"
    elif len(name) > MAX_NAME_LENGTH:
        reason = f"'{name}' is longer than the max allowed length {MAX_NAME_LENGTH}"
    elif not _LEGAL.fullmatch(name):
        reason = f"'{name}' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"
    return None if reason is None else f"Topic name is invalid: {reason}"
