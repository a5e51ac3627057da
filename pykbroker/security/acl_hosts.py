"""ACL host patterns (KIP-1276, Kafka 4.4): ``*``, an exact address, or a CIDR block (``10.0.0.0/8``,
``2001:db8::/32``) that matches every client address inside it. A pattern with a ``/`` must be a valid CIDR
block: CreateAcls refuses it otherwise with Kafka's message; host filters of DescribeAcls and DeleteAcls still
compare patterns as strings, as Kafka's do."""

from __future__ import annotations

import ipaddress
from functools import lru_cache

__all__ = ["host_error", "host_matches"]

WILDCARD_HOST = "*"


def host_error(host: str | None) -> str | None:
    """Kafka 4.4's INVALID_REQUEST message for an ACL's host pattern, None when it is valid."""
    if not host:
        return "Host pattern cannot be null or empty"
    if "/" not in host:
        return None
    address, _, prefix = host.partition("/")
    try:
        ip = ipaddress.ip_address(address)
        bits = int(prefix)
    except ValueError:
        return f"Invalid CIDR notation '{host}': Could not parse [{host}]"
    if not 0 <= bits <= ip.max_prefixlen:  # Kafka 4.4 words the two families' refusals differently
        if ip.version == 6:
            return (f"Invalid CIDR notation '{host}': Could not parse [{host}] - prefix length must be between 0 and "
                    f"{ip.max_prefixlen}")
        return f"Invalid CIDR notation '{host}': Value [{bits}] not in range [0,{ip.max_prefixlen}]"
    return None


@lru_cache(maxsize=1024)
def _network(pattern: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    try:
        return ipaddress.ip_network(pattern, strict=False)
    except ValueError:
        return None


@lru_cache(maxsize=4096)
def _address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def host_matches(pattern: str, host: str) -> bool:
    """Whether an ACL with host ``pattern`` applies to a client connected from ``host``."""
    if pattern == WILDCARD_HOST or pattern == host:
        return True
    if "/" not in pattern:
        return False
    network, address = _network(pattern), _address(host)
    if network is None or address is None:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None and network.version == 4:
        address = address.ipv4_mapped
    return address.version == network.version and address in network
