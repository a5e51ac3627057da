"""The server side of Kafka's SASL exchange on one connection (Kafka's SaslServerAuthenticator).

Frames go in, and each ``receive`` says what to send and whether to close: SaslHandshake v0/v1 (ApiVersions
may come first), then the mechanism's tokens, in SaslAuthenticate v0-2 requests after a v1 handshake or as
raw size-prefixed tokens after a v0 one. Any other request before authentication closes the connection;
during the token exchange it is answered with its API's ILLEGAL_SASL_STATE error first, as Kafka does.
Authentication failures (Kafka's AuthenticationExceptions: wrong credentials, an unsupported mechanism, a
request out of turn) are answered and closed only after ``connection.failed.authentication.delay.ms``;
malformed input closes at once.

KIP-368: with ``connections.max.reauth.ms`` the session lifetime goes back in SaslAuthenticate v1+;
a SaslHandshake on an authenticated connection whose session has a lifetime starts re-authentication
(at most once a second), which must keep the mechanism and the principal. The connection closes a
session that expired when the next request other than SaslHandshake arrives.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from pykbroker.security.errors import (
    IllegalSaslStateError,
    SaslAuthenticationError,
    SaslCredentialError,
    SaslProtocolError,
)
from pykbroker.security.listeners import ListenerSecurity
from pykbroker.security.plain import PlainServer
from pykbroker.security.scram import CredentialLookup, ScramServer, TokenLookup
from replication.metadata.credentials import ScramCredential
from wire import (
    ApiKey,
    DecodeError,
    ErrorCode,
    Reader,
    Writer,
    decode_request_header,
    encode_response_header,
    java,
    peek_request_header,
    response_header_version,
)
from wire.messages import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)

log = logging.getLogger("pykbroker.security.sasl")

API_VERSIONS_MAX = 4  # ApiVersions versions above this are answered UNSUPPORTED_VERSION by the ordinary path
MIN_REAUTH_INTERVAL_MS = 1000  # Kafka refuses to start a re-authentication sooner after the previous one


class SaslState(Enum):
    """Where a connection is in the SASL exchange.

    - HANDSHAKE_OR_VERSIONS_REQUEST: nothing served yet; ApiVersions or SaslHandshake may come.
    - HANDSHAKE_REQUEST: ApiVersions answered; only SaslHandshake may come.
    - AUTHENTICATE: a mechanism was chosen; its tokens are exchanged until it completes or fails.
    - REAUTH_BAD_MECHANISM: a re-authentication asked for another mechanism; its next token fails.
    - COMPLETE: authenticated; requests are served. A SaslHandshake may start re-authentication.
    - FAILED: the connection is closed.
    """

    HANDSHAKE_OR_VERSIONS_REQUEST = "handshake or versions request"
    HANDSHAKE_REQUEST = "handshake request"
    AUTHENTICATE = "authenticate"
    REAUTH_BAD_MECHANISM = "re-authentication with another mechanism"
    COMPLETE = "complete"
    FAILED = "failed"


_S = SaslState
_TRANSITIONS: dict[SaslState, frozenset[SaslState]] = {
    _S.HANDSHAKE_OR_VERSIONS_REQUEST: frozenset({_S.HANDSHAKE_REQUEST, _S.AUTHENTICATE, _S.FAILED}),
    _S.HANDSHAKE_REQUEST: frozenset({_S.AUTHENTICATE, _S.FAILED}),
    _S.AUTHENTICATE: frozenset({_S.COMPLETE, _S.FAILED}),
    _S.REAUTH_BAD_MECHANISM: frozenset({_S.FAILED}),
    _S.COMPLETE: frozenset({_S.AUTHENTICATE, _S.REAUTH_BAD_MECHANISM, _S.FAILED}),
    _S.FAILED: frozenset(),
}


@dataclass(frozen=True)
class AuthStep:
    """What the connection does with one frame received during authentication."""

    reply: bytes | None = None  # a response (header and body) or, after a v0 handshake, a raw token
    close: bool = False  # close the connection once ``reply`` is sent
    dispatch: bool = False  # serve the frame as an ordinary request (ApiVersions before the handshake)
    error_code: int | None = None  # answer the frame with its API's error response of this code, then close
    # An authentication failure (Kafka's AuthenticationException): the answer and the close wait
    # connection.failed.authentication.delay.ms, as Kafka delays them to slow down password guessing.
    delayed: bool = False


def java_hash_set_order(names: tuple[str, ...]) -> list[str]:
    """``names`` in the iteration order of a java.util.HashSet built from them, the order in which Kafka lists
    the enabled mechanisms (``new ArrayList<>(new HashSet<>(enabledMechanisms))``)."""
    return java.hash_set_order(names, java.hash_set_capacity(len(names)))


def _encode(response, api_key: int, version: int, correlation_id: int) -> bytes:
    w = Writer()
    encode_response_header(w, correlation_id, response_header_version(api_key, version))
    response.encode_into(w, version)
    return w.getvalue()


class SaslServerAuthenticator:
    """One connection's SASL state; ``clock_ms`` is injected so tests control session expiry."""

    def __init__(self, security: ListenerSecurity, scram_credentials: Callable[[str, str], ScramCredential | None],
                 clock_ms: Callable[[], int], peer: str,
                 token_credentials: Callable[[str, str], tuple | None] | None = None) -> None:
        self.security = security
        self._scram_credentials = scram_credentials  # (user, mechanism) -> ScramCredential
        # (token id, mechanism) -> (owner's name, ScramCredential, expiry) of a live delegation token
        self._token_credentials = token_credentials
        self.token_authenticated = False
        self._session_lifetime_ms = 0  # what SaslAuthenticate reports once authenticated
        self._clock_ms = clock_ms
        self.peer = peer
        self.state = SaslState.HANDSHAKE_OR_VERSIONS_REQUEST
        self._mechanisms = java_hash_set_order(security.mechanisms)
        self.mechanism: str | None = None
        self.principal: str | None = None
        self.session_expiration_ms: int | None = None
        self._server: PlainServer | ScramServer | None = None
        self._raw_tokens = False  # after a v0 handshake the tokens come without Kafka headers
        self._previous: tuple[str, str] | None = None  # (mechanism, principal) while re-authenticating
        self._last_reauth_start_ms = 0

    # -- state -----------------------------------------------------------------------------------------
    def transition_to(self, state: SaslState) -> None:
        if state not in _TRANSITIONS[self.state]:
            raise RuntimeError(f"illegal SASL state change {self.state.name} -> {state.name}")
        self.state = state

    @property
    def complete(self) -> bool:
        return self.state is SaslState.COMPLETE

    @property
    def _doing(self) -> str:
        return "re-authentication" if self._previous is not None else "authentication"

    def session_expired(self) -> bool:
        """True once an authenticated session outlived its lifetime (requests then close the connection)."""
        return self.session_expiration_ms is not None and self._clock_ms() > self.session_expiration_ms

    def maybe_begin_reauthentication(self) -> bool:
        """On a SaslHandshake after authentication: start re-authenticating when the session has a lifetime
        and the last attempt is a second old; otherwise the handshake is an ordinary (refused) request."""
        now = self._clock_ms()
        if not self.complete or self.session_expiration_ms is None:
            return False
        if self._last_reauth_start_ms and now - self._last_reauth_start_ms < MIN_REAUTH_INTERVAL_MS:
            return False
        assert self.mechanism is not None and self.principal is not None
        self._last_reauth_start_ms = now
        self._previous = (self.mechanism, self.principal)
        return True

    # -- frames ------------------------------------------------------------------------------------------
    def receive(self, frame: bytes | bytearray) -> AuthStep:
        """Handle one frame received before authentication completes (or a re-authentication's handshake)."""
        try:
            if self.state is SaslState.REAUTH_BAD_MECHANISM:
                raise SaslProtocolError("another mechanism than the session's")
            if self.state is SaslState.AUTHENTICATE:
                return self._token(frame)
            return self._handshake_phase(frame)
        except SaslProtocolError as exc:
            self._fail(f"{exc}")
            return AuthStep(close=True, delayed=isinstance(exc, IllegalSaslStateError))

    def _fail(self, reason: str) -> None:
        self.state = SaslState.FAILED
        log.warning("SASL %s failed for %s on listener %s (mechanism %s): %s", self._doing, self.peer,
                    self.security.name, self.mechanism or "-", reason)

    def _header(self, frame: bytes | bytearray):
        r = Reader(frame)
        try:
            api_key, version, _ = peek_request_header(r)
            return r, api_key, version, decode_request_header(r)
        except (DecodeError, ValueError, IndexError):
            raise SaslProtocolError("invalid request: a client configured with the wrong security protocol, "
                                    "or not a Kafka client") from None

    def _handshake_phase(self, frame: bytes | bytearray) -> AuthStep:
        r, api_key, version, header = self._header(frame)
        if api_key == ApiKey.API_VERSIONS and self._previous is None:
            if self.state is not SaslState.HANDSHAKE_OR_VERSIONS_REQUEST:
                raise SaslProtocolError("a second ApiVersions request during the SASL handshake")
            if version <= API_VERSIONS_MAX:
                self.transition_to(SaslState.HANDSHAKE_REQUEST)
            return AuthStep(dispatch=True)
        if api_key != ApiKey.SASL_HANDSHAKE:
            name = ApiKey(api_key).name if api_key in ApiKey._value2member_map_ else str(api_key)
            raise IllegalSaslStateError(f"unexpected Kafka request of type {name} during SASL handshake")
        if version > 1:
            raise SaslProtocolError(f"SaslHandshake v{version} is not supported")
        try:
            request = SaslHandshakeRequest.decode_from(r, version)
        except DecodeError:
            raise SaslProtocolError("malformed SaslHandshake request") from None
        mechanism = request.mechanism
        if mechanism not in self.security.mechanisms:
            self._fail(f"unsupported SASL mechanism {mechanism!r}")
            reply = SaslHandshakeResponse(error_code=ErrorCode.UNSUPPORTED_SASL_MECHANISM, mechanisms=self._mechanisms)
            return AuthStep(reply=_encode(reply, api_key, version, header.correlation_id), close=True, delayed=True)
        reply = SaslHandshakeResponse(error_code=ErrorCode.NONE, mechanisms=self._mechanisms)
        self._raw_tokens = version == 0
        if self._previous is not None and self._previous[0] != mechanism:
            self.transition_to(SaslState.REAUTH_BAD_MECHANISM)
            log.warning("SASL re-authentication of %s on listener %s asks for mechanism %s instead of %s",
                        self.peer, self.security.name, mechanism, self._previous[0])
        else:
            self.mechanism = mechanism
            self._server = (PlainServer(self.security.plain_users) if mechanism == "PLAIN"
                            else ScramServer(mechanism, self._scram_lookup(mechanism), self._token_lookup(mechanism)))
            self.transition_to(SaslState.AUTHENTICATE)
        return AuthStep(reply=_encode(reply, api_key, version, header.correlation_id))

    def _scram_lookup(self, mechanism: str) -> CredentialLookup:
        return lambda user: self._scram_credentials(user, mechanism)

    def _token_lookup(self, mechanism: str) -> TokenLookup | None:
        tokens = self._token_credentials
        return None if tokens is None else (lambda token_id: tokens(token_id, mechanism))

    def _token(self, frame: bytes | bytearray) -> AuthStep:
        assert self._server is not None and self.mechanism is not None
        if self._raw_tokens:
            try:
                token = self._evaluate(bytes(frame))
            except (SaslAuthenticationError, SaslCredentialError) as exc:
                self._fail(str(exc))
                return AuthStep(close=True, delayed=True)
            return AuthStep(reply=token)
        r, api_key, version, header = self._header(frame)
        if api_key != ApiKey.SASL_AUTHENTICATE:
            name = ApiKey(api_key).name if api_key in ApiKey._value2member_map_ else str(api_key)
            self._fail(f"unexpected Kafka request of type {name} during SASL authentication")
            return AuthStep(error_code=ErrorCode.ILLEGAL_SASL_STATE, close=True, delayed=True)
        if version > 2:
            raise SaslProtocolError(f"SaslAuthenticate v{version} is not supported")
        try:
            request = SaslAuthenticateRequest.decode_from(r, version)
        except DecodeError:
            raise SaslProtocolError("malformed SaslAuthenticate request") from None
        try:
            token = self._evaluate(bytes(request.auth_bytes))
        except (SaslAuthenticationError, SaslCredentialError) as exc:
            message = str(exc) if isinstance(exc, SaslAuthenticationError) else (
                f"Authentication failed during {self._doing} due to invalid credentials with SASL mechanism "
                f"{self.mechanism}")
            self._fail(str(exc))
            reply = SaslAuthenticateResponse(error_code=ErrorCode.SASL_AUTHENTICATION_FAILED, error_message=message,
                                             auth_bytes=b"")
            return AuthStep(reply=_encode(reply, api_key, version, header.correlation_id), close=True, delayed=True)
        lifetime = self._session_lifetime_ms if self.complete else 0
        reply = SaslAuthenticateResponse(error_code=ErrorCode.NONE, error_message="", auth_bytes=token,
                                         session_lifetime_ms=lifetime)  # Kafka's default message is empty
        return AuthStep(reply=_encode(reply, api_key, version, header.correlation_id))

    def _evaluate(self, token: bytes) -> bytes:
        """One token through the mechanism; on completion the principal and session expiry are set."""
        assert self._server is not None and self.mechanism is not None
        answer = self._server.evaluate(token)
        if self._server.complete:
            principal = f"User:{self._server.authorization_id}"
            if self._previous is not None and self._previous[1] != principal:
                old, new = self._previous[1].split(":", 1), principal.split(":", 1)
                raise SaslAuthenticationError(f"Cannot change principals during re-authentication from "
                                              f"{old[0]}.{old[1]}: {new[0]}.{new[1]}")
            reauth_ms = self.security.reauth_ms.get(self.mechanism, 0)
            now = self._clock_ms()
            # Kafka's session lifetime: connections.max.reauth.ms, and never past a token's expiry (KIP-368).
            expiry = getattr(self._server, "credential_expiry_ms", None)
            lifetimes = ([reauth_ms] if reauth_ms > 0 else []) + ([max(0, expiry - now)] if expiry is not None else [])
            self._session_lifetime_ms = min(lifetimes) if lifetimes else 0
            self.session_expiration_ms = now + self._session_lifetime_ms if lifetimes else None
            self.principal = principal
            self.token_authenticated = getattr(self._server, "token_authenticated", False)
            log.info("SASL %s succeeded for %s on listener %s: principal %s, mechanism %s%s", self._doing,
                     self.peer, self.security.name, principal, self.mechanism,
                     f", session lifetime {self._session_lifetime_ms} ms" if lifetimes else "")
            self._previous = None
            self.transition_to(SaslState.COMPLETE)
        return answer
