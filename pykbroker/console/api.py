"""The console's JSON API: one route per thing the page reads or does, each through the logged-in user's
Kafka session (so the broker's ACLs decide), writes only with ``console.write.actions.enable`` and each
write logged with its principal and outcome on the ``pykbroker.console.audit`` logger.

Answers: 200 with JSON; 400 ``{"error", "code"}`` when Kafka refuses (its error code and message) or
the input is wrong; 401 without a login when one is needed; 403 for a write while writes are off.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from pykbroker.console import admin, messages
from pykbroker.console.http import Request, Response, Route
from pykbroker.console.kafka import LoginError, RequestError
from pykbroker.console.schemas import ValueDecoder
from pykbroker.console.sessions import COOKIE, ConsoleUser, Sessions

__all__ = ["ConsoleApi"]

audit = logging.getLogger("pykbroker.console.audit")

Handler = Callable[[ConsoleUser, dict[str, Any]], Awaitable[Any]]


def _json(status: int, data: Any, headers: dict[str, str] | None = None) -> Response:
    return Response(status, "application/json", json.dumps(data).encode(), headers or {})


def _bytes(text: str | None, encoding: str) -> bytes | None:
    """A key or value the page sent: None, text (UTF-8) or hex/base64."""
    if text is None:
        return None
    if encoding == "hex":
        return bytes.fromhex(text)
    if encoding == "base64":
        return base64.b64decode(text)
    return text.encode()


def _int(v: Any, default: int | None = None) -> int | None:
    return default if v is None or v == "" else int(v)


class ConsoleApi:
    """Routes for ``ConsoleHttpServer``; ``overview`` renders /api/overview for a user."""

    def __init__(self, sessions: Sessions, writes_enabled: bool,
                 overview: Callable[[ConsoleUser], Awaitable[dict[str, Any]]],
                 identity: Callable[[], dict[str, Any]] = dict,
                 lag_history: Callable[[str], dict[str, Any] | None] = lambda _group: None,
                 decoder: ValueDecoder | None = None) -> None:
        self.sessions = sessions
        self.identity = identity  # cluster id and node id: in the page's header once someone may see it
        self.lag_history = lag_history  # a group's lag over the last minutes, when coordinated here
        self.decoder = decoder  # values in Confluent's wire format decoded with a registry's schemas
        self.writes_enabled = writes_enabled
        self.secure_cookie = False  # served over HTTPS: the session cookie only goes back over HTTPS
        self._overview = overview

    def routes(self) -> dict[tuple[str, str], Route]:
        reads: dict[str, Handler] = {
            "/api/overview": lambda u, q: self._overview(u),
            "/api/topic": self.topic,
            "/api/messages": lambda u, q: self._decoded(messages.browse(
                u.kafka, q["topic"], _int(q.get("partition")), q.get("start", "end"), q.get("value"),
                q.get("order", "newest") == "newest", _int(q.get("limit"), 100) or 100), "records"),
            "/api/search": self.search_progress,
            "/api/tail": lambda u, q: self._decoded(messages.tail(
                u.kafka, q["topic"], {int(p): o for p, o in json.loads(q["positions"]).items()}
                if q.get("positions") else None), "records"),
            "/api/groups": lambda u, q: admin.list_groups(u.kafka, []),  # without the groups of brokers down
            "/api/group": self.group,
            "/api/acls": lambda u, q: admin.acls(u.kafka),
            "/api/users": lambda u, q: admin.scram_users(u.kafka),
        }
        writes: dict[str, tuple[Handler, Callable[[dict[str, Any]], str]]] = {
            "/api/produce": (self.produce, lambda b: f"produce to {b['topic']}-{b.get('partition', 0)}"),
            "/api/topic/create": (lambda u, b: admin.create_topic(
                u.kafka, b["name"], int(b.get("partitions") or 1), int(b.get("replication_factor") or -1),
                {k: str(v) for k, v in (b.get("configs") or {}).items()}),
                lambda b: f"create topic {b['name']} (partitions={b.get('partitions')}, "
                          f"replication_factor={b.get('replication_factor')}, configs={b.get('configs') or {}})"),
            "/api/topic/configs": (lambda u, b: admin.alter_topic_configs(
                u.kafka, b["name"], {k: str(v) for k, v in (b.get("set") or {}).items()}, list(b.get("delete") or [])),
                lambda b: f"alter configs of topic {b['name']}: set {b.get('set') or {}} delete {b.get('delete') or []}"),
            "/api/topic/partitions": (lambda u, b: admin.create_partitions(u.kafka, b["name"], int(b["count"])),
                                      lambda b: f"add partitions to topic {b['name']} (count={b['count']})"),
            "/api/topic/delete": (self.delete_topic, lambda b: f"delete topic {b['name']}"),
            "/api/topic/delete-records": (lambda u, b: admin.delete_records(
                u.kafka, b["name"], int(b["partition"]), int(b["offset"])),
                lambda b: f"delete records of {b['name']}-{b['partition']} before offset {b['offset']}"),
            "/api/group/reset": (lambda u, b: admin.reset_offsets(
                u.kafka, b["group"], b["topic"], b["to"], b.get("value"), dry_run=False, group_type=b.get("type")),
                lambda b: f"reset offsets of group {b['group']} on {b['topic']} to {b['to']} {b.get('value') or ''}"),
            "/api/group/delete": (lambda u, b: admin.delete_group(u.kafka, b["group"]),
                                  lambda b: f"delete group {b['group']}"),
            "/api/acl/create": (lambda u, b: admin.alter_acl(u.kafka, b, delete=False), lambda b: f"create ACL {b}"),
            "/api/acl/delete": (lambda u, b: admin.alter_acl(u.kafka, b, delete=True), lambda b: f"delete ACL {b}"),
            "/api/user/upsert": (lambda u, b: admin.upsert_scram_user(
                u.kafka, b["user"], b.get("mechanism") or "SCRAM-SHA-256", b["password"]),
                lambda b: f"set SCRAM credential of {b['user']} ({b.get('mechanism') or 'SCRAM-SHA-256'})"),
            "/api/user/delete": (lambda u, b: admin.delete_scram_user(u.kafka, b["user"], b["mechanism"]),
                                 lambda b: f"delete SCRAM credential of {b['user']} ({b['mechanism']})"),
        }
        routes: dict[tuple[str, str], Route] = {
            ("GET", "/api/session"): self.session,
            ("POST", "/api/login"): self.login,
            ("POST", "/api/logout"): self.logout,
            ("POST", "/api/group/reset-preview"): self._reader(lambda u, b: admin.reset_offsets(
                u.kafka, b["group"], b["topic"], b["to"], b.get("value"), dry_run=True, group_type=b.get("type")),
                body=True),
            ("POST", "/api/search"): self._reader(self.search, body=True),
        }
        for path, handler in reads.items():
            routes[("GET", path)] = self._reader(handler)
        for path, (handler, describe) in writes.items():
            routes[("POST", path)] = self._writer(handler, describe)
        return routes

    # -- plumbing ---------------------------------------------------------------------------------------------

    async def _user(self, request: Request, *, required: bool = True) -> ConsoleUser | Response | None:
        """The request's user; else the answer to give: 401 without a login (when ``required``), 502 when the
        anonymous session cannot reach the broker."""
        try:
            user = await self.sessions.user(request.cookie(COOKIE))
        except (ConnectionError, OSError, RequestError) as exc:
            return _json(502, {"error": f"the broker did not answer: {exc}", "code": "NETWORK_EXCEPTION"})
        if user is None and required:
            return _json(401, {"error": "log in first", "code": "LOGIN_REQUIRED"})
        return user

    def _reader(self, handler: Handler, body: bool = False) -> Route:
        async def route(request: Request) -> Response:
            user = await self._user(request)
            if not isinstance(user, ConsoleUser):
                return user or _json(401, {})
            try:
                args = _body(request) if body else request.query
                return _json(200, await handler(user, args))
            except RequestError as exc:
                return _json(400, {"error": str(exc), "code": exc.error.name, "message": exc.message})
            except (KeyError, ValueError, TypeError) as exc:
                return _json(400, {"error": f"bad request: {exc!r}", "code": "INVALID_REQUEST"})
            except (ConnectionError, OSError) as exc:
                return _json(502, {"error": f"the broker did not answer: {exc}", "code": "NETWORK_EXCEPTION"})
        return route

    def _writer(self, handler: Handler, describe: Callable[[dict[str, Any]], str]) -> Route:
        read = self._reader(handler, body=True)

        async def route(request: Request) -> Response:
            user = await self._user(request)
            if not isinstance(user, ConsoleUser):
                return user or _json(401, {})
            if not self.writes_enabled:
                return _json(403, {"error": "the console is read-only: set console.write.actions.enable=true on the "
                                            "broker to allow changes", "code": "WRITES_DISABLED"})
            try:
                what = describe(_body(request))
            except (KeyError, ValueError, TypeError) as exc:
                return _json(400, {"error": f"bad request: {exc!r}", "code": "INVALID_REQUEST"})
            response = await read(request)
            outcome = "done" if response.status == 200 else "refused: " + json.loads(response.body)["error"]
            audit.info("console write by %s: %s: %s", _one_line(user.principal), _one_line(what), _one_line(outcome))
            return response
        return route

    # -- routes with more than one call -----------------------------------------------------------------------

    async def session(self, request: Request) -> Response:
        user = await self._user(request, required=False)
        if isinstance(user, Response):
            return user
        return _json(200, {"principal": user.principal if user else None, "login_required":
                           self.sessions.login_required, "write_enabled": self.writes_enabled,
                           **(self.identity() if user else {})})

    async def login(self, request: Request) -> Response:
        try:
            body = _body(request)
            token, user = await self.sessions.login(str(body["username"]), str(body["password"]))
        except (KeyError, ValueError) as exc:
            return _json(400, {"error": f"bad request: {exc!r}", "code": "INVALID_REQUEST"})
        except LoginError as exc:
            audit.info("console login refused for User:%s: %s", _one_line(str(_body(request).get("username"))),
                       _one_line(str(exc)))
            return _json(401, {"error": f"login refused: {exc}", "code": "SASL_AUTHENTICATION_FAILED"})
        except (ConnectionError, OSError) as exc:
            return _json(502, {"error": f"the broker did not answer: {exc}", "code": "NETWORK_EXCEPTION"})
        audit.info("console login: %s", _one_line(user.principal))
        return _json(200, {"principal": user.principal},
                     {"Set-Cookie": f"{COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict"
                                    + ("; Secure" if self.secure_cookie else "")})

    async def logout(self, request: Request) -> Response:
        self.sessions.logout(request.cookie(COOKIE))
        return _json(200, {}, {"Set-Cookie": f"{COOKIE}=; Path=/; Max-Age=0"})

    async def topic(self, user: ConsoleUser, q: dict[str, Any]) -> dict[str, Any]:
        name = q["name"]
        meta = (await user.kafka.metadata([name])).topics[0]
        admin.check(meta.error_code, None, f"topic {name}")
        parts = {p.partition_index: p.leader_id for p in meta.partitions}
        bounds = await messages.end_offsets(user.kafka, name, parts)
        partitions = [{"partition": p.partition_index, "leader": p.leader_id, "replicas": list(p.replica_nodes),
                       "isr": list(p.isr_nodes), "log_start_offset": bounds[p.partition_index][0],
                       "high_watermark": bounds[p.partition_index][1]}
                      for p in sorted(meta.partitions, key=lambda p: p.partition_index)]
        try:
            configs = await admin.topic_configs(user.kafka, name)
        except RequestError as exc:
            configs = [{"error": str(exc)}]
        return {"name": name, "internal": meta.is_internal, "partitions": partitions, "configs": configs}

    async def group(self, user: ConsoleUser, q: dict[str, Any]) -> dict[str, Any]:
        """The group as the user may describe it, with its lag history when this broker coordinates it."""
        described = await admin.describe_group(user.kafka, q["id"], q.get("type", "classic"))
        described["history"] = self.lag_history(q["id"])
        return described

    async def produce(self, user: ConsoleUser, b: dict[str, Any]) -> Any:
        encoding = b.get("encoding") or "text"
        headers = [(str(h[0]), _bytes(h[1], encoding)) for h in b.get("headers") or []]
        return await messages.produce(user.kafka, b["topic"], int(b.get("partition") or 0),
                                      _bytes(b.get("key") or None, encoding), _bytes(b.get("value"), encoding), headers)

    async def delete_topic(self, user: ConsoleUser, b: dict[str, Any]) -> None:
        if b.get("confirm") != b["name"]:
            raise ValueError("type the topic's name to confirm its deletion")
        await admin.delete_topic(user.kafka, b["name"])

    async def search_progress(self, user: ConsoleUser, q: dict[str, Any]) -> dict[str, Any]:
        if user.search is None:
            return {"done": True, "matches": [], "scanned": 0, "total": 0}
        progress = user.search.progress()
        if progress["done"] and self.decoder is not None:  # the page shows the matches once the search is done
            await self.decoder.decorate(progress["matches"])
        return progress

    async def _decoded(self, answer: Awaitable[dict[str, Any]], key: str) -> dict[str, Any]:
        """``answer`` with the records under ``key`` decoded through the schema registry, when there is one."""
        data = await answer
        if self.decoder is not None:
            await self.decoder.decorate(data[key])
        return data

    async def search(self, user: ConsoleUser, b: dict[str, Any]) -> dict[str, Any]:
        if user.search is not None:
            user.search.cancel()
        needle = str(b.get("filter") or "")
        if not needle:
            raise ValueError("filter is empty")
        job = messages.SearchJob(user.kafka, b["topic"], _int(b.get("partition")), b.get("start") or "beginning",
                                 b.get("value"), needle.encode(),
                                 max(1, min(int(b.get("max_scan") or 10_000), messages.MAX_SCAN)), self.decoder)
        await job.prepare()
        user.search = job
        job.begin()
        return job.progress()


def _one_line(text: str) -> str:
    """``text`` with line breaks and other control characters escaped: what people typed cannot forge audit lines."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _body(request: Request) -> dict[str, Any]:
    """The JSON object of a POST; only with ``Content-Type: application/json``, which another site's page
    cannot send without a CORS preflight this server never answers (no cross-site writes)."""
    if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
        raise ValueError("POST bodies must be application/json")
    if not request.body:
        return {}
    data = json.loads(request.body)
    if not isinstance(data, dict):
        raise ValueError("the body must be a JSON object")
    return data
