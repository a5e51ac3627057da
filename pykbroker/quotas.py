"""Client quotas (KIP-55/KIP-257/KIP-546): what DescribeClientQuotas and AlterClientQuotas see, and throttling.

An entity is a set of (type, name) pairs: ``user``, ``client-id`` (either or both) or ``ip``; a name of
None is the default for that type. Alterations are checked as Kafka's ClientQuotaControlManager checks
them, and filters as Kafka's ClientQuotasImage.describe applies them.

Throttling: ``producer_byte_rate`` and ``consumer_byte_rate`` are enforced as Kafka's ClientQuotaManager
enforces them. A (user, client id) is bound by the most specific quota configured (user+client,
user+default client, user, default user+client, default user+default client, default user, client,
default client); its bytes are measured over ``quota.window.num`` samples of
``quota.window.size.seconds``, and a request that takes the rate over the quota gets the throttle time
that brings it back, which the broker reports and waits out before reading the connection's next
request (KIP-219). ``request_percentage`` is enforced as Kafka's ClientRequestQuotaManager enforces it: the
time the broker spends on a client's requests, as a percentage of one thread per second, over the same
windows; its throttle time is at most one window. ``connection_creation_rate`` of ``ip`` entities is
enforced by pykbroker.connection_quotas. ``controller_mutation_rate`` is stored and described but not
enforced yet.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Iterable, Mapping

from replication.metadata.quota_entities import (
    CLIENT_ID,
    CONSUMER_BYTE_RATE,
    IP,
    IP_KEYS,
    PRODUCER_BYTE_RATE,
    REQUEST_PERCENTAGE,
    USER,
    USER_AND_CLIENT_KEYS,
    Entity,
)
from replication.sampled_rate import SampledRate

__all__ = ["USER", "CLIENT_ID", "IP", "Entity", "QuotaError", "validate_alteration", "describe", "QuotaManager",
           "RequestQuotaManager", "PRODUCER_BYTE_RATE", "CONSUMER_BYTE_RATE", "REQUEST_PERCENTAGE"]

_MAX = {"LONG": 2**63 - 1, "INT": 2**31 - 1}
MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2



class QuotaError(Exception):
    """A refused request: ``error_code`` with Kafka's message."""

    def __init__(self, error_code: int, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code


def _describe_entity(entity: Iterable[tuple[str, str | None]]) -> str:
    return "ClientQuotaEntity(entries=" + str({t: n for t, n in sorted(entity)}) + ")"


def validate_alteration(entity: list[tuple[str, str | None]], ops: list[tuple[str, float | None]]) -> str | None:
    """Why Kafka refuses this alteration (INVALID_REQUEST), or None. ``ops``: (key, value; None removes)."""
    if not entity:
        return "Invalid empty client quota entity"
    types: dict[str, str | None] = {}
    for entity_type, name in entity:
        if entity_type in types:
            return f"Invalid client quota entity, duplicate entity entry {entity_type}"
        if entity_type not in (USER, CLIENT_ID, IP):
            return f"Unhandled client quota entity type: {entity_type}"
        if name is not None and name == "":
            return f"Empty {entity_type} not supported"
        types[entity_type] = name
    keys = [key for key, _ in ops]
    duplicate = next((k for k in keys if keys.count(k) > 1), None)
    if duplicate is not None:
        return f"Duplicate quota key {duplicate} not updating quota for this entity {_describe_entity(entity)}"
    if IP in types:
        if USER in types or CLIENT_ID in types:
            return "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"
        if not _is_ip_or_host(types[IP]):
            return f"{types[IP]} is not a valid IP or resolvable host."
        valid = IP_KEYS
    else:
        valid = USER_AND_CLIENT_KEYS
    for key, value in ops:
        if key not in valid:
            return f"Invalid configuration key {key}"
        if value is None:
            continue
        if value <= 0.0:
            return f"Quota {key} must be greater than 0"
        kind = valid[key]
        if kind in _MAX:
            if value > _MAX[kind]:
                return f"Proposed value for {key} is too large for {'an INT' if kind == 'INT' else 'a LONG'}."
            if abs(value % 1.0) > 1e-6:
                return f"{key} cannot be a fractional value."
    return None


def _is_ip_or_host(name: str | None) -> bool:
    if name is None:
        return True
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        pass
    try:
        socket.gethostbyname(name)
        return True
    except OSError:
        return False


def describe(quotas: Mapping[Entity, Mapping[str, float]], components: list[tuple[str, int, str | None]],
             strict: bool) -> list[tuple[Entity, Mapping[str, float]]]:
    """The entities matching the filter components (type, match type, match), as Kafka filters them."""
    from wire import ErrorCode

    exact: dict[str, str | None] = {}
    specified: set[str] = set()
    for entity_type, match_type, match in components:
        if not entity_type:
            raise QuotaError(ErrorCode.INVALID_REQUEST, "Invalid empty entity type.")
        if entity_type in exact or entity_type in specified:
            raise QuotaError(ErrorCode.INVALID_REQUEST,
                             f"Entity type {entity_type} cannot appear more than once in the filter.")
        if entity_type not in (IP, USER, CLIENT_ID):
            raise QuotaError(ErrorCode.UNSUPPORTED_VERSION, f"Unsupported entity type {entity_type}")
        if match_type == MATCH_EXACT:
            if match is None:
                raise QuotaError(ErrorCode.INVALID_REQUEST,
                                 "Request specified MATCH_TYPE_EXACT, but set match string to null.")
            exact[entity_type] = match
        elif match_type == MATCH_DEFAULT:
            if match is not None:
                raise QuotaError(ErrorCode.INVALID_REQUEST,
                                 "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.")
            exact[entity_type] = None
        elif match_type == MATCH_SPECIFIED:
            if match is not None:
                raise QuotaError(ErrorCode.INVALID_REQUEST,
                                 "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.")
            specified.add(entity_type)
        else:
            raise QuotaError(ErrorCode.INVALID_REQUEST, f"Unknown match type {match_type}")
    if (IP in exact or IP in specified) and ({USER, CLIENT_ID} & (set(exact) | specified)):
        raise QuotaError(ErrorCode.INVALID_REQUEST, "Invalid entity filter component combination. IP filter "
                                                    "component should not be used with user or clientId filter "
                                                    "component.")
    out = []
    for entity, values in quotas.items():
        names = dict(entity)
        if strict and len(names) != len(exact) + len(specified):
            continue
        if any(t not in names or names[t] != n for t, n in exact.items()):
            continue
        if any(t not in names for t in specified):
            continue
        out.append((entity, values))
    return out


class QuotaManager:
    """Rate throttling of one quota key (produced or fetched bytes) for every (user, client id)."""

    # The longest throttle one request can get (None: unbounded, as Kafka's byte-rate quotas).
    max_throttle_ms: int | None = None
    # Told of every throttle given, as (user, client id, ms): metrics' throttle-time (None: nobody listens).
    on_throttle: Callable[[str, str, int], None] | None = None

    def __init__(self, key: str, quotas: Callable[[], Mapping[Entity, Mapping[str, float]]], *, samples: int = 11,
                 window_seconds: int = 1) -> None:
        self.key = key
        self._quotas = quotas
        self.samples = samples
        self.window_ms = window_seconds * 1000
        self._sensors: dict[tuple[str, str], SampledRate] = {}
        self._enabled_for: object = None  # the quotas mapping ``enabled`` last looked at, and its answer
        self._enabled = False

    def enabled(self) -> bool:
        """Whether any entity has a quota for this key (nothing needs measuring otherwise). Asked for every
        request: the answer is kept until the metadata's quotas change (a new, immutable mapping)."""
        quotas = self._quotas()
        if quotas is not self._enabled_for:
            self._enabled = any(self.key in values for values in quotas.values())
            self._enabled_for = quotas
        return self._enabled

    def _bound(self, user: str, client_id: str) -> tuple[float, tuple[str, str]] | None:
        """The quota binding (user, client id) and the key its usage is counted under (Kafka's metric tags)."""
        quotas = self._quotas()
        if not quotas:
            return None
        candidates: list[tuple[set[tuple[str, str | None]], tuple[str, str]]] = []
        if user:
            candidates += [({(USER, user), (CLIENT_ID, client_id)}, (user, client_id)),
                           ({(USER, user), (CLIENT_ID, None)}, (user, client_id)),
                           ({(USER, user)}, (user, "")),
                           ({(USER, None), (CLIENT_ID, client_id)}, (user, client_id)),
                           ({(USER, None), (CLIENT_ID, None)}, (user, client_id)),
                           ({(USER, None)}, (user, ""))]
        candidates += [({(CLIENT_ID, client_id)}, ("", client_id)), ({(CLIENT_ID, None)}, ("", client_id))]
        for entity, tags in candidates:
            value = quotas.get(frozenset(entity), {}).get(self.key)
            if value is not None:
                return value, tags
        return None

    def max_value_in_window(self, user: str, client_id: str) -> float:
        """The most a quota lets (user, client id) use in one measured window, ``inf`` without one (Kafka's
        maxValueInQuotaWindow: the quota times the samples but the current one); ShareFetch reads no more."""
        bound = self._bound(user, client_id or "")
        return float("inf") if bound is None else bound[0] * (self.samples - 1) * self.window_ms / 1000

    def record(self, user: str, client_id: str, value: float, now_ms: int) -> int:
        """Count ``value`` bytes; the throttle time in ms (0 within the quota)."""
        bound = self._bound(user, client_id or "")
        if bound is None:
            return 0
        quota, tags = bound
        sensor = self._sensors.get(tags)
        if sensor is None:
            sensor = self._sensors[tags] = SampledRate(self.samples, self.window_ms)
        sensor.record(value, now_ms)
        rate, window = sensor.rate_and_window(now_ms)
        if rate <= quota:
            return 0
        throttle = round((rate - quota) / quota * window)
        if self.max_throttle_ms is not None:
            throttle = min(throttle, self.max_throttle_ms)
        if self.on_throttle is not None:
            self.on_throttle(tags[0], tags[1], throttle)
        return throttle

    def record_no_throttle(self, user: str, client_id: str, value: float, now_ms: int) -> None:
        """Count ``value`` without throttling this request (it counts against the next ones)."""
        bound = self._bound(user, client_id or "")
        if bound is not None:
            sensor = self._sensors.get(bound[1])
            if sensor is None:
                sensor = self._sensors[bound[1]] = SampledRate(self.samples, self.window_ms)
            sensor.record(value, now_ms)

    def unrecord(self, user: str, client_id: str, value: float, now_ms: int) -> None:
        """Take back bytes that were not sent after all (a throttled fetch answers empty, as Kafka's)."""
        bound = self._bound(user, client_id or "")
        if bound is not None and bound[1] in self._sensors:
            self._sensors[bound[1]].record(-value, now_ms)


class RequestQuotaManager(QuotaManager):
    """``request_percentage``: the broker's time on a client's requests, in percent of one thread per second.

    As Kafka's ClientRequestQuotaManager: a request's handling time counts and may throttle it, the time
    spent sending its response counts against the next ones, and a throttle lasts one window at most.
    """

    def __init__(self, quotas: Callable[[], Mapping[Entity, Mapping[str, float]]], *, samples: int = 11,
                 window_seconds: int = 1) -> None:
        super().__init__(REQUEST_PERCENTAGE, quotas, samples=samples, window_seconds=window_seconds)
        self.max_throttle_ms = self.window_ms

    def record_time(self, user: str, client_id: str, seconds: float, now_ms: int) -> int:
        """Count ``seconds`` of request handling; the throttle time in ms (0 within the quota)."""
        return self.record(user, client_id, seconds * 100.0, now_ms)

    def record_time_no_throttle(self, user: str, client_id: str, seconds: float, now_ms: int) -> None:
        self.record_no_throttle(user, client_id, seconds * 100.0, now_ms)
