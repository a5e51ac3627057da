"""Listener security as Kafka configures it: TLS (``tls``), SASL PLAIN (``plain``) and SCRAM (``scram``)
mechanisms, the per-connection SASL state machine (``sasl_authenticator``), the JAAS option parser
(``jaas``) and the per-listener settings built from the broker config (``listeners``).

Nothing here does I/O on sockets: the connection feeds frames in and sends what comes out.
"""
