"""Share sessions (Kafka's ShareSessionCache): which partitions a member fetches, and the session epoch.

A member opens its session with ShareFetch epoch 0 (listing its partitions), then each ShareFetch or
ShareAcknowledge carries the next epoch (1, 2, ... wrapping to 1 after 2^31-1) and only the partitions
that changed (added in ``topics``, removed in ``forgotten_topics_data``); epoch -1 closes the session after
its acknowledgements. A wrong epoch is INVALID_SHARE_SESSION_EPOCH, a missing session
SHARE_SESSION_NOT_FOUND, and more than ``group.share.max.share.sessions`` sessions
SHARE_SESSION_LIMIT_REACHED. Sessions are keyed by (group id, member id).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from wire import ErrorCode

__all__ = ["FINAL_EPOCH", "INITIAL_EPOCH", "ShareSession", "ShareSessionCache", "ShareSessionError"]

INITIAL_EPOCH = 0
FINAL_EPOCH = -1

TopicIdPartition = tuple[uuid.UUID, int]


class ShareSessionError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class ShareSession:
    group_id: str
    member_id: str
    epoch: int
    partitions: dict[TopicIdPartition, None] = field(default_factory=dict)  # ordered set
    connection: object = None


def next_epoch(epoch: int) -> int:
    return 1 if epoch >= 2**31 - 1 else epoch + 1


class ShareSessionCache:
    def __init__(self, max_sessions: int = 2000) -> None:
        self.max_sessions = max_sessions
        self._sessions: dict[tuple[str, str], ShareSession] = {}

    def get(self, group_id: str, member_id: str) -> ShareSession | None:
        return self._sessions.get((group_id, member_id))

    def open(self, group_id: str, member_id: str, partitions: list[TopicIdPartition],
             connection: object = None) -> ShareSession:
        """Epoch 0: a new session (replacing the member's old one)."""
        key = (group_id, member_id)
        if key not in self._sessions and len(self._sessions) >= self.max_sessions:
            raise ShareSessionError(ErrorCode.SHARE_SESSION_LIMIT_REACHED,
                                    f"the limit of {self.max_sessions} share sessions is reached")
        session = ShareSession(group_id, member_id, next_epoch(INITIAL_EPOCH), dict.fromkeys(partitions),
                               connection)
        self._sessions[key] = session
        return session

    def advance(self, group_id: str, member_id: str, epoch: int) -> ShareSession:
        """An epoch > 0 or -1: the session, checked; its epoch moves on (unless it is being closed)."""
        session = self._sessions.get((group_id, member_id))
        if session is None:
            raise ShareSessionError(ErrorCode.SHARE_SESSION_NOT_FOUND,
                                    f"no share session for member {member_id} of group {group_id}")
        if epoch == FINAL_EPOCH:
            return session
        if epoch != session.epoch:
            raise ShareSessionError(ErrorCode.INVALID_SHARE_SESSION_EPOCH,
                                    f"share session epoch {epoch} is not the expected {session.epoch}")
        session.epoch = next_epoch(session.epoch)
        return session

    def update(self, session: ShareSession, added: list[TopicIdPartition], forgotten: list[TopicIdPartition]) -> None:
        for tp in forgotten:
            session.partitions.pop(tp, None)
        for tp in added:
            session.partitions[tp] = None

    def answered_records(self, session: ShareSession, partitions: list[TopicIdPartition]) -> None:
        """``partitions`` answered records: they move to the end of the session, as in Kafka 4.4's
        ShareSessionContext (with the rotation by epoch, the order the next fetch reads them in)."""
        for tp in partitions:
            if session.partitions.pop(tp, False) is None:
                session.partitions[tp] = None

    def remove(self, group_id: str, member_id: str) -> ShareSession | None:
        return self._sessions.pop((group_id, member_id), None)

    def all(self) -> list[ShareSession]:
        return list(self._sessions.values())

    def sessions_of(self, connection: object) -> list[ShareSession]:
        return [s for s in self._sessions.values() if s.connection is connection]

    def __len__(self) -> int:
        return len(self._sessions)
