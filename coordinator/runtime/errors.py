"""Errors of coordinator operations, and how log append failures are reported.

An operation raises ``ApiError(code)`` to refuse a request; the coordinator turns it into that API's
error response. A ``CoordinatorLog`` raises ``CoordinatorLogError(code)`` when an append fails; the
runtime maps the code as Kafka's coordinators map append errors before it reaches a client.
"""

from __future__ import annotations

from wire import ErrorCode

__all__ = ["ApiError", "CoordinatorLogError", "NotCoordinatorError", "UnknownRecordTypeError",
           "append_error_to_response_error"]


class ApiError(Exception):
    """An operation refused with a Kafka error code (and, where the API carries one, a message)."""

    def __init__(self, error_code: int, message: str | None = None) -> None:
        super().__init__(message or f"error {error_code}")
        self.error_code = int(error_code)
        self.message = message


class NotCoordinatorError(ApiError):
    """This node does not lead the coordinator's partition (or is still loading it)."""


class CoordinatorLogError(Exception):
    """An append to a coordinator's partition failed with a Kafka error code."""

    def __init__(self, error_code: int, message: str | None = None) -> None:
        super().__init__(message or f"append failed with error {error_code}")
        self.error_code = int(error_code)


class UnknownRecordTypeError(ValueError):
    """A record type this coordinator does not read (share or streams groups); skipped at load."""

    def __init__(self, record_type: int) -> None:
        super().__init__(f"unknown __consumer_offsets record type {record_type}")
        self.record_type = record_type


def append_error_to_response_error(code: int) -> int:
    """Kafka's mapping of a failed group (and share) coordinator append to the error a client is given."""
    if code in (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_ENOUGH_REPLICAS,
                ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND, ErrorCode.REQUEST_TIMED_OUT):
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if code in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.KAFKA_STORAGE_ERROR):
        return ErrorCode.NOT_COORDINATOR
    if code in (ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE, ErrorCode.INVALID_FETCH_SIZE):
        return ErrorCode.UNKNOWN_SERVER_ERROR
    return code
