"""Errors a group coordinator operation answers with, and how log append failures are reported.

An operation raises ``ApiError(code)`` to refuse a request; the coordinator turns it into that API's
error response. A ``CoordinatorLog`` raises ``CoordinatorLogError(code)`` when an append fails; the
code is mapped as Kafka's coordinator maps append errors before it reaches a client.
"""

from __future__ import annotations

from wire import ErrorCode

__all__ = ["ApiError", "CoordinatorLogError", "NotCoordinatorError",
           "append_error_to_response_error"]



class ApiError(Exception):
    """An operation refused with a Kafka error code (and, where the API carries one, a message)."""

    def __init__(self, error_code: int, message: str | None = None) -> None:
        super().__init__(message or f"error {error_code}")
        self.error_code = int(error_code)
        self.message = message


class NotCoordinatorError(ApiError):
    """This node does not lead the group's __consumer_offsets partition (or is still loading it)."""


class CoordinatorLogError(Exception):
    """An append to a __consumer_offsets partition failed with a Kafka error code."""

    def __init__(self, error_code: int, message: str | None = None) -> None:
        super().__init__(message or f"append failed with error {error_code}")
        self.error_code = int(error_code)


def append_error_to_response_error(code: int) -> int:
    """Kafka's mapping of a failed coordinator append to the error a client is given."""
    if code in (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_ENOUGH_REPLICAS,
                ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND, ErrorCode.REQUEST_TIMED_OUT):
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if code in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.KAFKA_STORAGE_ERROR):
        return ErrorCode.NOT_COORDINATOR
    if code in (ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE, ErrorCode.INVALID_FETCH_SIZE):
        return ErrorCode.UNKNOWN_SERVER_ERROR
    return code
