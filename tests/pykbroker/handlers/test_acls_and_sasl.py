"""ACL and SASL APIs on a PLAINTEXT broker without an authorizer: Kafka's answers, and real clients' view."""

from __future__ import annotations

import pytest

from pykbroker.testing import RawClient
from wire import ErrorCode
from wire.messages import (
    CreateAclsRequest,
    DeleteAclsRequest,
    DescribeAclsRequest,
    SaslAuthenticateRequest,
    SaslHandshakeRequest,
)
from wire.messages.create_acls_request import AclCreation
from wire.messages.delete_acls_request import DeleteAclsFilter


def test_acl_apis_say_no_authorizer_is_configured(broker):
    with RawClient(broker.bootstrap) as c:
        described = c.request(DescribeAclsRequest(resource_type_filter=1, pattern_type_filter=1, operation=1,
                                                  permission_type=1), 3)
        assert (described.error_code, described.error_message) == (ErrorCode.SECURITY_DISABLED,
                                                                   "No Authorizer is configured on the broker")
        created = c.request(CreateAclsRequest(creations=[AclCreation(resource_type=2, resource_name="t",
                                                                     resource_pattern_type=3, principal="User:a",
                                                                     host="*", operation=3, permission_type=3)]), 3)
        assert [r.error_code for r in created.results] == [ErrorCode.SECURITY_DISABLED]
        deleted = c.request(DeleteAclsRequest(filters=[DeleteAclsFilter(resource_type_filter=1, pattern_type_filter=1,
                                                                        operation=1, permission_type=1)]), 3)
        assert [r.error_code for r in deleted.filter_results] == [ErrorCode.SECURITY_DISABLED]


def test_sasl_on_a_plaintext_listener_is_an_illegal_state(broker):
    with RawClient(broker.bootstrap) as c:
        assert c.request(SaslHandshakeRequest(mechanism="PLAIN"), 1).error_code == ErrorCode.ILLEGAL_SASL_STATE
        assert c.request(SaslAuthenticateRequest(auth_bytes=b"x"), 2).error_code == ErrorCode.ILLEGAL_SASL_STATE


def test_kafka_python_admin_sees_security_disabled(broker):
    from kafka import KafkaAdminClient
    from kafka.admin import (
        ACLFilter,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        ResourcePatternFilter,
        ResourceType,
    )
    from kafka.errors import SecurityDisabledError
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        with pytest.raises(SecurityDisabledError, match="No Authorizer is configured"):
            admin.describe_acls(ACLFilter(principal=None, host="*", operation=ACLOperation.ANY,
                                          permission_type=ACLPermissionType.ANY,
                                          resource_pattern=ResourcePatternFilter(ResourceType.ANY, None,
                                                                                 ACLResourcePatternType.ANY)))
    finally:
        admin.close()
