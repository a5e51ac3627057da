"""The broker's own copies of the coordinators' topic names (kept so that start-up needs no coordinator)."""

from coordinator.group import GROUP_METADATA_TOPIC_NAME
from coordinator.transaction.metadata import TRANSACTION_STATE_TOPIC_NAME
from pykbroker import broker


def test_coordinator_topic_names_match_the_coordinators():
    assert broker.GROUP_METADATA_TOPIC_NAME == GROUP_METADATA_TOPIC_NAME
    assert broker.TRANSACTION_STATE_TOPIC_NAME == TRANSACTION_STATE_TOPIC_NAME
