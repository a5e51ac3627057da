"""How a SASL exchange fails, in Kafka's ways (SaslServerAuthenticator's exception handling)."""

from __future__ import annotations


class SaslAuthenticationError(Exception):
    """The client is told this exact message (Kafka's SaslAuthenticationException), then disconnected."""


class SaslCredentialError(Exception):
    """The client gets only Kafka's generic "invalid credentials" message (a SaslException), which must not
    reveal, say, whether the user exists; ``str(exc)`` is for the broker's log."""


class SaslProtocolError(Exception):
    """The client broke the protocol so badly that Kafka closes the connection without an answer."""


class IllegalSaslStateError(SaslProtocolError):
    """A Kafka request out of turn during the SASL handshake: Kafka's IllegalSaslStateException, an
    authentication failure, so the close waits ``connection.failed.authentication.delay.ms``."""
