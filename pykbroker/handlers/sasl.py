"""SaslHandshake v0-1 and SaslAuthenticate v0-2 outside a SASL authentication phase.

Kafka advertises both on every listener. A SASL listener's connection hands them to its authenticator
(pykbroker.security.sasl_authenticator) until it is authenticated, and a SaslHandshake starts
re-authentication when the session has a lifetime (KIP-368). Everywhere else, on PLAINTEXT and SSL
listeners and on authenticated connections, Kafka answers ILLEGAL_SASL_STATE, and so does this module.
"""

from __future__ import annotations

from pykbroker.context import RequestContext
from pykbroker.registry import handler
from wire import ApiKey, ErrorCode
from wire.messages import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)

AFTER_AUTHENTICATION = "SaslAuthenticate request received after successful authentication"


def handshake_error(request: SaslHandshakeRequest | None, version: int, code: int) -> SaslHandshakeResponse:
    return SaslHandshakeResponse(error_code=code, mechanisms=[])


@handler(ApiKey.SASL_HANDSHAKE, 0, 1, error_response=handshake_error)
async def handle_sasl_handshake(ctx: RequestContext, request: SaslHandshakeRequest) -> SaslHandshakeResponse:
    return handshake_error(request, ctx.api_version, ErrorCode.ILLEGAL_SASL_STATE)


def authenticate_error(request: SaslAuthenticateRequest | None, version: int, code: int) -> SaslAuthenticateResponse:
    return SaslAuthenticateResponse(error_code=code, error_message=AFTER_AUTHENTICATION, auth_bytes=b"")


@handler(ApiKey.SASL_AUTHENTICATE, 0, 2, error_response=authenticate_error)
async def handle_sasl_authenticate(ctx: RequestContext, request: SaslAuthenticateRequest) -> SaslAuthenticateResponse:
    return authenticate_error(request, ctx.api_version, ErrorCode.ILLEGAL_SASL_STATE)
