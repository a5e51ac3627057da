"""Per-listener security settings, built once at start from the broker config with Kafka's rules.

A listener's security protocol comes from ``listener.security.protocol.map`` (a name missing from it is a
start-up error, as in Kafka). A SASL listener serves ``sasl.enabled.mechanisms`` (or its
``listener.name.<name>.sasl.enabled.mechanisms``); each mechanism needs
``listener.name.<name>.<mechanism>.sasl.jaas.config``. The broker-wide ``sasl.jaas.config`` is ignored
with a warning, as Kafka's brokers ignore it, and static JAAS files are not read.
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field

from pykbroker.config import Config, ConfigError
from pykbroker.security.jaas import parse_jaas_config
from replication.metadata.credentials import SCRAM_MECHANISMS

log = logging.getLogger("pykbroker.security")

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SERVED_MECHANISMS = ("PLAIN", *SCRAM_MECHANISMS)
PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"


@dataclass(frozen=True)
class ListenerSecurity:
    """How connections on one listener are secured and authenticated."""

    name: str
    protocol: str
    mechanisms: tuple[str, ...] = ()  # enabled SASL mechanisms, in configuration order, without repeats
    plain_users: Mapping[str, str] = field(default_factory=dict, repr=False)  # PLAIN user -> password
    reauth_ms: Mapping[str, int] = field(default_factory=dict)  # mechanism -> connections.max.reauth.ms
    max_receive_size: int = 524288  # largest frame accepted before authentication completes
    ssl_context: ssl.SSLContext | None = None

    @property
    def sasl(self) -> bool:
        return self.protocol.startswith("SASL_")


def protocol_map(config: Config) -> dict[str, str]:
    """``listener.security.protocol.map`` as {listener name: security protocol}."""
    out: dict[str, str] = {}
    for item in config["listener.security.protocol.map"]:
        name, sep, protocol = item.partition(":")
        protocol = protocol.strip().upper()
        if not sep or not name.strip() or protocol not in SECURITY_PROTOCOLS:
            raise ConfigError(f"listener.security.protocol.map: '{item}' is not NAME:PROTOCOL with a protocol "
                              f"among {', '.join(SECURITY_PROTOCOLS)}")
        out[name.strip().upper()] = protocol
    return out


def _mechanism_property(config: Config, listener: str, mechanism: str, name: str) -> str | None:
    return config.listener_properties.get(listener.lower(), {}).get(f"{mechanism.lower()}.{name}")


def _sasl_settings(config: Config, listener: str) -> dict:
    mechanisms = tuple(dict.fromkeys(config.listener_value(listener, "sasl.enabled.mechanisms")))
    if not mechanisms:
        raise ConfigError(f"listener.name.{listener.lower()}.sasl.enabled.mechanisms: a SASL listener needs at "
                          "least one mechanism")
    unsupported = [m for m in mechanisms if m not in SERVED_MECHANISMS]
    if unsupported:
        raise ConfigError(f"sasl.enabled.mechanisms: {', '.join(unsupported)} not served by pykbroker (listener "
                          f"{listener}); it serves {', '.join(SERVED_MECHANISMS)}")
    plain_users: dict[str, str] = {}
    reauth_ms: dict[str, int] = {}
    for mechanism in mechanisms:
        prop = f"listener.name.{listener.lower()}.{mechanism.lower()}.sasl.jaas.config"
        jaas = _mechanism_property(config, listener, mechanism, "sasl.jaas.config")
        if jaas is None:
            raise ConfigError(f"{prop}: not set; SASL mechanism {mechanism} on listener {listener} needs it "
                              "(static JAAS files are not read)")
        entries = parse_jaas_config(prop, jaas)
        if mechanism == "PLAIN":
            for entry in entries:
                if entry.login_module == PLAIN_LOGIN_MODULE:
                    plain_users.update({k[len("user_"):]: v for k, v in entry.options.items() if k.startswith("user_")})
        reauth = _mechanism_property(config, listener, mechanism, "connections.max.reauth.ms")
        if reauth is None:
            reauth_ms[mechanism] = config.listener_value(listener, "connections.max.reauth.ms")
        else:
            try:
                reauth_ms[mechanism] = max(0, int(reauth))
            except ValueError:
                raise ConfigError(f"listener.name.{listener.lower()}.{mechanism.lower()}.connections.max.reauth.ms: "
                                  f"expected an integer, got '{reauth}'") from None
    return {"mechanisms": mechanisms, "plain_users": plain_users, "reauth_ms": reauth_ms,
            "max_receive_size": config.listener_value(listener, "sasl.server.max.receive.size")}


def listener_security(config: Config) -> dict[str, ListenerSecurity]:
    """Every configured listener's security, by name; raises ConfigError as Kafka refuses to start."""
    protocols = protocol_map(config)
    if "sasl.jaas.config" in config.explicit:
        log.warning("Server config sasl.jaas.config should be prefixed with SASL mechanism name, ignoring config")
    out: dict[str, ListenerSecurity] = {}
    for lst in config.listeners:
        protocol = protocols.get(lst.name)
        if protocol is None:
            raise ConfigError(f"listeners: listener with name {lst.name} not found in listener.security.protocol.map")
        settings: dict = {}
        if protocol.startswith("SASL_"):
            settings = _sasl_settings(config, lst.name)
        if protocol in ("SSL", "SASL_SSL"):
            from pykbroker.security.tls import server_ssl_context

            settings["ssl_context"] = server_ssl_context(config, lst.name, protocol)
        out[lst.name] = ListenerSecurity(lst.name, protocol, **settings)
    return out
