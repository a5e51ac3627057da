"""One module per API; importing this package registers every handler in the registry."""

from pykbroker.handlers import (  # noqa: F401
    acls,
    admin,
    api_versions,
    describe_cluster,
    describe_quorum,
    group,
    metadata,
    sasl,
)
from pykbroker.handlers.data import fetch, list_offsets, offset_for_leader_epoch, produce  # noqa: F401
from pykbroker.handlers.txn import init_producer_id  # noqa: F401
