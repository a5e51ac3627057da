"""Kafka-format segment logs: what the broker persists partitions in (see docs/architecture.md).

Layers, each a module with one job (lower ones know nothing of higher ones):

- ``index`` / ``offset_index`` / ``time_index`` / ``transaction_index``: the per-segment indexes.
- ``file_records``: a segment's ``.log`` file, and ``FileRegion`` (what reads hand to ``sendfile``).
- ``segment`` < ``segments`` < ``local_log`` < ``log``: one segment, the ordered map of them, the
  directory's files (roll, read, truncate, flush, recovery point), the partition's log (offsets, high
  watermark, last stable offset, producer state, leader epochs, the lock).
- ``recovery`` (loading a directory after a crash), ``retention``, ``cleaner`` (compaction),
  ``producer_state``, ``leader_epoch``, ``checkpoints`` (every small file Kafka keeps), ``scheduler``
  (the background thread), ``log_dir_failure`` (offline dirs), ``log_manager`` (all logs of a broker).

Public names are re-exported here.
"""

from storage.checkpoints import (
    CleanShutdownFile,
    LeaderEpochCheckpointFile,
    OffsetCheckpointFile,
    PartitionMetadataFile,
    topic_id_from_string,
    topic_id_to_string,
)
from storage.cleaner import CleanResult, LogCleaner, clean_log
from storage.config import LogConfig
from storage.errors import (
    CorruptIndexError,
    CorruptRecordError,
    DuplicateSequenceError,
    InconsistentTopicIdError,
    InvalidProducerEpochError,
    InvalidRecordError,
    InvalidTimestampError,
    InvalidTxnStateError,
    KafkaStorageError,
    LogConfigError,
    LogDirNotFoundError,
    OffsetOutOfRangeError,
    OutOfOrderSequenceError,
    RecordBatchTooLargeError,
    RecordTooLargeError,
    RecordValidationError,
    StorageError,
    TransactionCoordinatorFencedError,
    UnexpectedAppendOffsetError,
    UnknownProducerIdError,
)
from storage.file_records import FileRegion
from storage.leader_epoch import LeaderEpochFileCache
from storage.local_log import FetchDataInfo, LogOffsetMetadata
from storage.log import (
    EARLIEST_LOCAL_TIMESTAMP,
    EARLIEST_TIMESTAMP,
    LATEST_TIERED_TIMESTAMP,
    LATEST_TIMESTAMP,
    MAX_TIMESTAMP,
    Log,
    LogAppendInfo,
)
from storage.log_dir_failure import LogDirFailureChannel
from storage.log_manager import LogManager
from storage.producer_state import AppendOrigin, ProducerStateManager
from storage.scheduler import InlineScheduler, Scheduler
from storage.segment import TimestampAndOffset
from storage.transaction_index import AbortedTxn

__all__ = [
    "AbortedTxn", "AppendOrigin", "CleanResult", "CleanShutdownFile", "CorruptIndexError", "CorruptRecordError",
    "DuplicateSequenceError", "EARLIEST_LOCAL_TIMESTAMP", "EARLIEST_TIMESTAMP", "FetchDataInfo", "FileRegion",
    "InconsistentTopicIdError", "InlineScheduler", "InvalidProducerEpochError", "InvalidRecordError",
    "InvalidTimestampError", "InvalidTxnStateError", "KafkaStorageError", "LATEST_TIERED_TIMESTAMP",
    "LATEST_TIMESTAMP", "LeaderEpochCheckpointFile", "LeaderEpochFileCache", "Log", "LogAppendInfo", "LogCleaner",
    "LogConfig", "LogConfigError", "LogDirFailureChannel", "LogDirNotFoundError", "LogManager", "LogOffsetMetadata", "MAX_TIMESTAMP",
    "OffsetCheckpointFile", "OffsetOutOfRangeError", "OutOfOrderSequenceError", "PartitionMetadataFile",
    "ProducerStateManager", "RecordBatchTooLargeError", "RecordTooLargeError", "RecordValidationError", "Scheduler", "StorageError",
    "TimestampAndOffset", "TransactionCoordinatorFencedError", "UnexpectedAppendOffsetError",
    "UnknownProducerIdError", "clean_log", "topic_id_from_string", "topic_id_to_string",
]
