"""Storage exceptions, each carrying the Kafka error code a handler answers with.

``CorruptRecordError`` and ``InvalidRecordError`` come from the record-batch codec (wire) and are
re-exported here: the log raises them for batches it refuses.
"""

from __future__ import annotations

from wire import CorruptRecordError, ErrorCode, InvalidRecordError, RecordError

__all__ = [
    "CorruptIndexError",
    "CorruptRecordError",
    "CorruptSnapshotError",
    "DuplicateSequenceError",
    "InvalidProducerEpochError",
    "InvalidTopicConfigError",
    "OffsetMovedToTieredStorageError",
    "InvalidRecordError",
    "InvalidTimestampError",
    "InvalidTxnStateError",
    "KafkaStorageError",
    "LogConfigError",
    "LogSegmentOffsetOverflowError",
    "OffsetOutOfRangeError",
    "OutOfOrderSequenceError",
    "RecordBatchTooLargeError",
    "RecordError",
    "RecordTooLargeError",
    "RecordValidationError",
    "StorageError",
    "TransactionCoordinatorFencedError",
    "InconsistentTopicIdError",
    "UnexpectedAppendOffsetError",
    "UnknownProducerIdError",
]


class StorageError(Exception):
    """Base of the errors the storage layer raises itself (codec errors derive from RecordError)."""

    error_code: int = ErrorCode.UNKNOWN_SERVER_ERROR


class KafkaStorageError(StorageError):
    """The log directory is offline (I/O error, full disk); nothing was written (KAFKA_STORAGE_ERROR)."""

    error_code = ErrorCode.KAFKA_STORAGE_ERROR


class OffsetOutOfRangeError(StorageError):
    """A fetch or lookup offset outside [log_start_offset, log_end_offset] (OFFSET_OUT_OF_RANGE)."""

    error_code = ErrorCode.OFFSET_OUT_OF_RANGE


class OffsetMovedToTieredStorageError(StorageError):
    """A fetch offset below the local log start that only remote storage holds (OFFSET_MOVED_TO_TIERED_STORAGE);
    the replica manager reads it from there for consumers, followers are told."""

    error_code = ErrorCode.OFFSET_MOVED_TO_TIERED_STORAGE


class RecordTooLargeError(StorageError):
    """A batch larger than max.message.bytes (MESSAGE_TOO_LARGE)."""

    error_code = ErrorCode.MESSAGE_TOO_LARGE


class RecordBatchTooLargeError(StorageError):
    """A set of batches larger than a segment can hold (RECORD_LIST_TOO_LARGE)."""

    error_code = ErrorCode.RECORD_LIST_TOO_LARGE


class RecordValidationError(InvalidRecordError, StorageError):
    """Records of a batch refused one by one (Kafka's RecordValidationException wrapping an
    InvalidRecordException, KIP-467): ``record_errors`` holds (index of the record in its batch, message)
    for each; INVALID_RECORD. An InvalidRecordError, as before per-record errors existed."""

    error_code = ErrorCode.INVALID_RECORD

    def __init__(self, message: str, record_errors: list[tuple[int, str | None]] | None = None) -> None:
        super().__init__(message)
        self.record_errors = record_errors or []


class InvalidTimestampError(StorageError):
    """A CreateTime timestamp outside message.timestamp.before/after.max.ms, or a producer's LogAppendTime
    (INVALID_TIMESTAMP); ``record_errors`` as RecordValidationError's."""

    error_code = ErrorCode.INVALID_TIMESTAMP

    def __init__(self, message: str, record_errors: list[tuple[int, str | None]] | None = None) -> None:
        super().__init__(message)
        self.record_errors = record_errors or []


class OutOfOrderSequenceError(StorageError):
    """An idempotent producer's batch does not follow its last sequence (OUT_OF_ORDER_SEQUENCE_NUMBER)."""

    error_code = ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


class DuplicateSequenceError(StorageError):
    """A retried batch older than the five kept per producer (DUPLICATE_SEQUENCE_NUMBER)."""

    error_code = ErrorCode.DUPLICATE_SEQUENCE_NUMBER


class InvalidProducerEpochError(StorageError):
    """A batch from a producer epoch older than the current one (INVALID_PRODUCER_EPOCH)."""

    error_code = ErrorCode.INVALID_PRODUCER_EPOCH


class UnknownProducerIdError(StorageError):
    """Producer state for this id was lost (UNKNOWN_PRODUCER_ID)."""

    error_code = ErrorCode.UNKNOWN_PRODUCER_ID


class InvalidTxnStateError(StorageError):
    """A non-transactional batch inside an open transaction, or the reverse (INVALID_TXN_STATE)."""

    error_code = ErrorCode.INVALID_TXN_STATE


class TransactionCoordinatorFencedError(StorageError):
    """A transaction marker from an older coordinator epoch (TRANSACTION_COORDINATOR_FENCED)."""

    error_code = ErrorCode.TRANSACTION_COORDINATOR_FENCED


class LogConfigError(StorageError, ValueError):
    """A topic config value Kafka would reject; the message names the property (INVALID_CONFIG)."""

    error_code = ErrorCode.INVALID_CONFIG

    def __init__(self, name: str, value: object, reason: str) -> None:
        super().__init__(f"Invalid value {value} for configuration {name}: {reason}")
        self.name = name
        self.value = value


class InvalidTopicConfigError(LogConfigError):
    """A topic config combination Kafka refuses with a message of its own (no "Invalid value ..." prefix)."""

    def __init__(self, message: str) -> None:  # noqa: D107 - the message is the whole error
        StorageError.__init__(self, message)
        self.name = ""
        self.value = None


class CorruptIndexError(StorageError):
    """An index file fails its sanity check; recovery rebuilds it from the log."""


class CorruptSnapshotError(StorageError):
    """A producer-state snapshot with a bad version or CRC; recovery deletes it and replays the log."""


class LogSegmentOffsetOverflowError(StorageError):
    """An offset too far from the segment's base offset for a 4-byte relative offset."""


class UnexpectedAppendOffsetError(StorageError):
    """A follower append whose first offset is below the log end offset, or offsets out of order."""

    error_code = ErrorCode.UNKNOWN_SERVER_ERROR


class InconsistentTopicIdError(StorageError):
    """partition.metadata names another topic id than the one the log is opened for."""

    error_code = ErrorCode.INCONSISTENT_TOPIC_ID


class LogDirNotFoundError(StorageError):
    """A log dir named by a request is not one of this broker's ``log.dirs``."""

    error_code = ErrorCode.LOG_DIR_NOT_FOUND
