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
    txn,  # noqa: F401,E402
)
from pykbroker.handlers.data import fetch, list_offsets, offset_for_leader_epoch, produce  # noqa: F401
