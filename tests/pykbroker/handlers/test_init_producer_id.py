"""InitProducerId for idempotent producers: unique ids with epoch 0, durable across restarts."""

from __future__ import annotations

from pykbroker.testing import RawClient
from wire import ErrorCode
from wire.messages import InitProducerIdRequest


def test_idempotent_producers_get_distinct_ids_with_epoch_zero(broker):
    with RawClient(broker.bootstrap) as c:
        answers = [c.request(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000), v)
                   for v in (0, 2, 4, 5)]
    assert all(a.error_code == ErrorCode.NONE and a.producer_epoch == 0 for a in answers)
    assert len({a.producer_id for a in answers}) == 4


def test_ids_are_not_reused_after_kill_9(fresh_broker):
    with RawClient(fresh_broker.bootstrap) as c:
        before = c.request(InitProducerIdRequest(transactional_id=None), 4).producer_id
    fresh_broker.restart(hard=True)
    with RawClient(fresh_broker.bootstrap) as c:
        after = c.request(InitProducerIdRequest(transactional_id=None), 4).producer_id
    assert after > before


def test_transactional_ids_keep_their_producer_id_and_bump_the_epoch(broker):
    with RawClient(broker.bootstrap) as c:
        first = c.request(InitProducerIdRequest(transactional_id="ipi-tx", transaction_timeout_ms=60000), 4)
        again = c.request(InitProducerIdRequest(transactional_id="ipi-tx", transaction_timeout_ms=60000), 4)
        other = c.request(InitProducerIdRequest(transactional_id="ipi-other", transaction_timeout_ms=60000), 0)
        too_long = c.request(InitProducerIdRequest(transactional_id="ipi-x", transaction_timeout_ms=10**9), 4)
    assert (first.error_code, first.producer_epoch) == (ErrorCode.NONE, 0)
    assert (again.error_code, again.producer_id, again.producer_epoch) == (ErrorCode.NONE, first.producer_id, 1)
    assert other.error_code == ErrorCode.NONE and other.producer_id != first.producer_id
    assert too_long.error_code == ErrorCode.INVALID_TRANSACTION_TIMEOUT
