"""Client quotas: Kafka's checks of alterations and filters, which quota binds a client, the throttle time."""

from __future__ import annotations

import pytest

from pykbroker.quotas import (
    CLIENT_ID,
    CONSUMER_BYTE_RATE,
    IP,
    PRODUCER_BYTE_RATE,
    REQUEST_PERCENTAGE,
    USER,
    QuotaError,
    QuotaManager,
    RequestQuotaManager,
    describe,
    validate_alteration,
)
from wire import ErrorCode


@pytest.mark.parametrize("entity,ops,message", [
    ([], [(PRODUCER_BYTE_RATE, 1.0)], "Invalid empty client quota entity"),
    ([(USER, "a"), (USER, "b")], [], "Invalid client quota entity, duplicate entity entry user"),
    ([("group", "g")], [], "Unhandled client quota entity type: group"),
    ([(CLIENT_ID, "")], [], "Empty client-id not supported"),
    ([(IP, "1.2.3.4"), (USER, "a")], [], "IP entity shouldnot be combined"),
    ([(IP, "1.2.3.4")], [(PRODUCER_BYTE_RATE, 5.0)], "Invalid configuration key producer_byte_rate"),
    ([(USER, "a")], [("no_such_quota", 5.0)], "Invalid configuration key no_such_quota"),
    ([(USER, "a")], [(PRODUCER_BYTE_RATE, 0.0)], "Quota producer_byte_rate must be greater than 0"),
    ([(USER, "a")], [(PRODUCER_BYTE_RATE, 10.5)], "producer_byte_rate cannot be a fractional value."),
    ([(USER, "a")], [(PRODUCER_BYTE_RATE, 1.0), (PRODUCER_BYTE_RATE, 2.0)], "Duplicate quota key producer_byte_rate"),
])
def test_alterations_kafka_refuses(entity, ops, message):
    assert message in validate_alteration(entity, ops)


def test_alterations_kafka_accepts():
    assert validate_alteration([(USER, None), (CLIENT_ID, "c")], [("request_percentage", 12.5)]) is None
    assert validate_alteration([(IP, None)], [("connection_creation_rate", 10.0)]) is None
    assert validate_alteration([(CLIENT_ID, "c")], [(PRODUCER_BYTE_RATE, None)]) is None  # a removal


QUOTAS = {frozenset({(USER, "u")}): {PRODUCER_BYTE_RATE: 1.0}, frozenset({(CLIENT_ID, None)}): {CONSUMER_BYTE_RATE: 2.0},
          frozenset({(USER, "u"), (CLIENT_ID, "c")}): {PRODUCER_BYTE_RATE: 3.0}, frozenset({(IP, "1.2.3.4")}): {}}


def described(components, strict=False):
    return sorted((sorted(entity, key=lambda e: e[0]) for entity, _ in describe(QUOTAS, components, strict)), key=str)


def test_describe_filters_as_kafka():
    assert described([(USER, 0, "u")]) == [[(CLIENT_ID, "c"), (USER, "u")], [(USER, "u")]]
    assert described([(USER, 0, "u")], strict=True) == [[(USER, "u")]]
    assert described([(CLIENT_ID, 1, None)]) == [[(CLIENT_ID, None)]]
    assert described([(CLIENT_ID, 2, None)]) == [[(CLIENT_ID, "c"), (USER, "u")], [(CLIENT_ID, None)]]
    assert len(described([])) == 4
    for components, code in (([(USER, 0, None)], ErrorCode.INVALID_REQUEST), ([(USER, 1, "x")], ErrorCode.INVALID_REQUEST),
                             ([(USER, 2, None), (USER, 2, None)], ErrorCode.INVALID_REQUEST),
                             ([(IP, 2, None), (USER, 2, None)], ErrorCode.INVALID_REQUEST),
                             (([("group", 2, None)]), ErrorCode.UNSUPPORTED_VERSION)):
        with pytest.raises(QuotaError) as exc:
            describe(QUOTAS, components, False)
        assert exc.value.error_code == code


def test_the_most_specific_quota_binds_and_usage_is_shared_at_its_level():
    quotas = {frozenset({(USER, "u")}): {PRODUCER_BYTE_RATE: 1000.0},
              frozenset({(USER, "u"), (CLIENT_ID, "c")}): {PRODUCER_BYTE_RATE: 5000.0},
              frozenset({(CLIENT_ID, None)}): {PRODUCER_BYTE_RATE: 100.0}}
    m = QuotaManager(PRODUCER_BYTE_RATE, lambda: quotas, samples=11, window_seconds=1)
    # 10 s window: 40 000 bytes is 4 000 B/s, within u+c's 5 000 but over u's 1 000 (shared by u's other clients).
    assert m.record("u", "c", 40_000, 1_000_000) == 0
    assert m.record("u", "other", 40_000, 1_000_000) == 30_000  # (4000 - 1000) / 1000 * 10 s
    assert m.record("", "anyone", 2_000, 1_000_000) == 10_000  # the default client quota: (200 - 100) / 100 * 10 s
    assert QuotaManager(CONSUMER_BYTE_RATE, lambda: quotas).record("u", "c", 10**9, 1_000_000) == 0  # no such quota


def test_usage_ages_out_of_the_window():
    m = QuotaManager(PRODUCER_BYTE_RATE, lambda: {frozenset({(CLIENT_ID, "c")}): {PRODUCER_BYTE_RATE: 1000.0}})
    assert m.record("", "c", 20_000, 0) > 0
    assert m.record("", "c", 1, 30_000) == 0  # 30 s later the burst is outside the 11 windows


def test_request_percentage_counts_handling_time_and_throttles_at_most_one_window():
    quotas = {frozenset({(CLIENT_ID, "busy")}): {REQUEST_PERCENTAGE: 10.0}}  # 10% of one thread
    m = RequestQuotaManager(lambda: quotas, samples=11, window_seconds=1)
    assert m.enabled() and not RequestQuotaManager(lambda: {}).enabled()
    # 10 s window: 0.5 s of handling is 5% of a thread, within the quota; 1.5 s more is 20%, over it
    assert m.record_time("", "busy", 0.5, 1_000_000) == 0
    # (20 - 10) / 10 * 10 s would be 10 s; Kafka's ClientRequestQuotaManager caps it at one window
    assert m.record_time("", "busy", 1.5, 1_000_000) == 1_000
    m.record_time_no_throttle("", "busy", 5.0, 1_000_000)  # a response's send time: counted, never throttled
    assert m.record_time("", "busy", 0.0, 1_000_000) == 1_000  # ...but the next request pays for it
    assert m.record_time("", "idle", 5.0, 1_000_000) == 0  # no quota for this client
