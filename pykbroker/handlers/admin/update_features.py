"""UpdateFeatures v0-2 (KIP-584, ``kafka-features upgrade|downgrade``): change the finalized feature levels.

Validated as Kafka 4.4's controller does (``replication.metadata.features.apply_updates``), all or nothing: a refused
update fails the request with INVALID_UPDATE_VERSION and "The update failed for all features since the
following feature had an error: ...". On success v0 and v1 list every feature (message "NONE", as
Kafka's controller writes it); v2 lists none.
The upgrade type is read from v1+ (v0's allow_downgrade is ignored, as Kafka's controller ignores it).
``validate_only`` (v1+) checks without changing anything.
"""

from __future__ import annotations

import logging

from pykbroker.context import RequestContext
from pykbroker.registry import handler
from pykbroker.security.auth_helper import AclOperation, authorize_cluster, not_authorized_message
from replication.metadata.features import FeatureUpdate, FeatureUpdateError, apply_updates
from wire import ApiKey, ErrorCode
from wire.messages import UpdateFeaturesRequest, UpdateFeaturesResponse
from wire.messages.update_features_response import UpdatableFeatureResult

log = logging.getLogger("pykbroker.handlers.update_features")

FAILED_PREFIX = "The update failed for all features since the following feature had an error: "


def error_response(request: UpdateFeaturesRequest | None, version: int, code: int) -> UpdateFeaturesResponse:
    return UpdateFeaturesResponse(error_code=code, error_message=ErrorCode(code).name if code else None,
                                  results=[])


@handler(ApiKey.UPDATE_FEATURES, 0, 2, error_response=error_response)
async def handle_update_features(ctx: RequestContext, request: UpdateFeaturesRequest) -> UpdateFeaturesResponse:
    if not authorize_cluster(ctx, AclOperation.ALTER):  # answered by Kafka's controller
        return UpdateFeaturesResponse(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                      error_message=not_authorized_message(ctx, AclOperation.ALTER), results=[])
    store = ctx.broker.metadata
    # v0 has no upgrade type: the field's default (upgrade) applies.
    updates = [FeatureUpdate(u.feature, u.max_version_level, u.upgrade_type if ctx.api_version >= 1 else 1)
               for u in request.feature_updates]
    # Kafka names its active controller; a cluster's is the ZooKeeper controller, a single node is its own.
    controller_id = ctx.metadata.controller_id if ctx.metadata.controller_id >= 0 else ctx.broker.node_id
    validate_only = ctx.api_version >= 1 and request.validate_only
    try:
        if validate_only:
            apply_updates(store.image.finalized_features, updates, controller_id)
            old = new = store.image.finalized_features
        else:  # checked against the stored levels, and again if another broker changed them meanwhile
            old, new = await store.update_finalized_features(
                lambda current: apply_updates(current, updates, controller_id))
    except FeatureUpdateError as exc:
        log.warning("UpdateFeatures refused (%s): %s", ctx.describe(), exc)
        return UpdateFeaturesResponse(error_code=exc.code, error_message=FAILED_PREFIX + str(exc), results=[])
    if dict(new) != dict(old):
        log.info("finalized features changed from %s to %s (%s)", dict(old), dict(new), ctx.describe())
        broker = ctx.broker
        if broker.admin.elr_enabled:  # as Kafka's controller: enabling ELR makes min.insync.replicas cluster-wide
            await broker.admin.ensure_elr_min_insync_replicas()
            await broker.admin.alter_broker_configs("", dict(store.image.broker_configs.get("", {})))
    results = [] if ctx.api_version >= 2 else [
        UpdatableFeatureResult(feature=u.feature, error_code=ErrorCode.NONE, error_message="NONE")
        for u in request.feature_updates]
    return UpdateFeaturesResponse(error_code=ErrorCode.NONE, error_message=None, results=results)
