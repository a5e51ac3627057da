"""ACL host patterns (KIP-1276): CIDR blocks checked with Kafka 4.4's messages and matched against addresses."""

from __future__ import annotations

import pytest

from pykbroker.security.acl_hosts import host_error, host_matches


@pytest.mark.parametrize("host, message", [
    ("*", None), ("127.0.0.1", None), ("a b", None), ("10.1.2.3/24", None), ("0.0.0.0/0", None),
    ("2001:db8::/32", None), ("::1/128", None),
    ("", "Host pattern cannot be null or empty"),
    ("10.0.0.0/33", "Invalid CIDR notation '10.0.0.0/33': Value [33] not in range [0,32]"),
    ("::/129", "Invalid CIDR notation '::/129': Could not parse [::/129] - prefix length must be between 0 and 128"),
    ("host/8", "Invalid CIDR notation 'host/8': Could not parse [host/8]"),
    ("10.0.0.0/x", "Invalid CIDR notation '10.0.0.0/x': Could not parse [10.0.0.0/x]"),
])
def test_host_patterns_are_checked_as_kafka_44_checks_them(host, message):
    assert host_error(host) == message


@pytest.mark.parametrize("pattern, host, matches", [
    ("*", "10.9.8.7", True), ("10.9.8.7", "10.9.8.7", True), ("10.9.8.7", "10.9.8.6", False),
    ("10.0.0.0/8", "10.9.8.7", True), ("10.0.0.0/8", "11.0.0.1", False), ("10.1.2.3/24", "10.1.2.200", True),
    ("0.0.0.0/0", "192.0.2.1", True), ("127.0.0.1/32", "127.0.0.1", True), ("127.0.0.1/32", "127.0.0.2", False),
    ("2001:db8::/32", "2001:db8:1::5", True), ("2001:db8::/32", "10.0.0.1", False),
    ("10.0.0.0/8", "::ffff:10.1.1.1", True), ("10.0.0.0/8", "not-an-address", False),
])
def test_cidr_blocks_match_the_addresses_inside_them(pattern, host, matches):
    assert host_matches(pattern, host) is matches
