"""How a SASL exchange fails, in Kafka's three ways (SaslServerAuthenticator's exception handling)."""

from __future__ import annotations


class SaslAuthenticationError(Exception):
    """The client is told this exact message (Kafka's SaslAuthenticationException), then disconnected."""


class SaslCredentialError(Exception):
    """The client gets only Kafka's generic "invalid credentials" message (a SaslException), which must not
    reveal, say, whether the user exists; ``str(exc)`` is for the broker's log."""


class SaslProtocolError(Exception):
    """The client broke the protocol so badly that Kafka closes the connection without an answer."""
