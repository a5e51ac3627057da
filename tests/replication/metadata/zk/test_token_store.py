"""Delegation tokens in a real ZooKeeper under Kafka's /delegation_token layout: two brokers' token managers share
them (created through one, renewed, used and expired through the other), and the znodes hold Kafka's JSON
without the HMAC."""

from __future__ import annotations

import asyncio
import base64
import json
import shutil
import uuid

import pytest

from pykbroker.security.delegation_tokens import DelegationTokenManager
from pykbroker.testing import ZooKeeperProcess
from replication.metadata.zk.client import ZooKeeperClient
from replication.metadata.zk.token_store import ZooKeeperTokenStore, decode_token, encode_token

if shutil.which("java") is None:
    pytest.skip("ZooKeeper needs java", allow_module_level=True)

HOUR = 3_600_000


@pytest.fixture(scope="module")
def zk_server(tmp_path_factory):
    with ZooKeeperProcess(tmp_path_factory.mktemp("zk-tokens")) as server:
        yield server


async def wait_until(condition, timeout: float = 10.0) -> None:
    async def poll():
        while not condition():
            await asyncio.sleep(0.02)
    await asyncio.wait_for(poll(), timeout)


def test_two_brokers_share_tokens_through_zookeeper(zk_server):
    connect = f"{zk_server.connect}/t-{uuid.uuid4().hex[:12]}"
    now = [1_000_000]

    async def main():
        clients = [ZooKeeperClient(connect), ZooKeeperClient(connect)]
        for c in clients:
            await c.start()
        try:
            managers = []
            for c in clients:
                store = ZooKeeperTokenStore(c)
                manager = DelegationTokenManager(store, "shared-secret", 7 * 24 * HOUR, 24 * HOUR, HOUR,
                                                 lambda: now[0])
                await store.start(on_change=manager.reload)
                manager.reload()
                managers.append(manager)
            one, two = managers
            code, token = await one.create("User:alice", "User:admin", ["User:bob"], -1)
            assert code == 0
            hmac = one.hmac(token.token_id)
            assert two.hmac(token.token_id) == hmac  # both derive it from the shared key
            await wait_until(lambda: two.scram_credential(token.token_id, "SCRAM-SHA-256") is not None)
            data, _ = await clients[1].get(f"/delegation_token/tokens/{token.token_id}")
            doc = json.loads(data)
            assert doc == {"version": 3, "owner": "User%3Aalice", "tokenRequester": "User%3Aadmin",
                           "renewers": ["User%3Abob"], "issueTimestamp": 1_000_000,
                           "maxTimestamp": 1_000_000 + 7 * 24 * HOUR, "expiryTimestamp": 1_000_000 + 24 * HOUR,
                           "tokenId": token.token_id}
            assert base64.b64encode(hmac).decode() not in data.decode() and hmac.hex() not in data.decode()
            assert (await two.renew("User:bob", hmac, HOUR)) == (0, now[0] + HOUR)
            for _ in range(500):  # the renewal reaches the first broker through the change notification
                if [t.expiry_ms for t, _ in await one.tokens(lambda t: True)] == [now[0] + HOUR]:
                    break
                await asyncio.sleep(0.02)
            assert [t.expiry_ms for t, _ in await one.tokens(lambda t: True)] == [now[0] + HOUR]
            assert (await two.expire("User:alice", hmac, -1))[0] == 0
            await wait_until(lambda: one.scram_credential(token.token_id, "SCRAM-SHA-256") is None)
            assert await clients[0].get(f"/delegation_token/tokens/{token.token_id}") is None
        finally:
            for c in clients:
                await c.close()

    asyncio.run(main())


def test_kafkas_token_json_round_trips():
    data = (b'{"owner":"User%3Aalice","renewers":["User%3Abob"],"tokenRequester":"User%3Aalice",'
            b'"issueTimestamp":1,"maxTimestamp":3,"expiryTimestamp":2,"tokenId":"abc","version":3}')
    token = decode_token(data)
    assert (token.owner, token.renewers, token.requester, token.issue_ms, token.expiry_ms, token.max_ms) == \
        ("User:alice", ["User:bob"], "User:alice", 1, 2, 3)
    assert json.loads(encode_token(token)) == json.loads(data)
