"""A Kafka Streams group (``group.protocol=streams``) in the console, in a real headless Chromium: two
instances of a real Kafka Streams 4.4 application (compat_tests/streams_app.py) on one broker; the group
page shows each member with its process id and active tasks (together every task of both subtopologies), the topology ready with its repartition and changelog topics, and the
committed offsets with lag, all from StreamsGroupDescribe and OffsetFetch as the logged-in user; once the
application stops, its input offsets are reset (preview, then apply) as for any group.

Slow (two JVMs): run with PYKBROKER_CONSOLE_SLOW=1 (``make test-console-slow``, part of ``make test-slow``).
"""

from __future__ import annotations

import json
import os
import shutil
import time
import urllib.request
import uuid
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from compat_tests.streams_app import StreamsApp, produce_keys, streams_jars
from pykbroker.testing import BrokerProcess
from tests.pykbroker.console.browser import Browser
from tests.pykbroker.console.test_workbench import shot

pytestmark = [
    pytest.mark.skipif(os.environ.get("PYKBROKER_CONSOLE_SLOW") != "1",
                       reason="slow: PYKBROKER_CONSOLE_SLOW=1 (make test-console-slow)"),
    pytest.mark.skipif(shutil.which("chromium") is None,
                       reason="chromium is installed by `make test` (tools/install_system_deps.sh)"),
]
PARTITIONS = 4
KEYS = 200


def call(url: str, path: str, body: object = None) -> Any:
    request = urllib.request.Request(url + path, data=None if body is None else json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"}, method="GET" if body is None else "POST")
    with urllib.request.urlopen(request, timeout=30) as r:
        return json.loads(r.read())


def group_json(url: str, group: str) -> dict:
    return call(url, f"api/group?id={group}&type=streams")


def test_a_streams_group_shows_its_processes_tasks_topology_and_lag(tmp_path):
    jars = streams_jars()
    if jars is None:
        pytest.skip("java or Maven is missing: Kafka Streams cannot run")
    app_id = f"count-{uuid.uuid4().hex[:8]}"
    with BrokerProcess(tmp_path / "broker", overrides={
            "console.listener": "127.0.0.1:0",
            "console.write.actions.enable": "true"}) as broker:
        broker.start()
        url = broker.console_url
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        for f in admin.create_topics([NewTopic(t, PARTITIONS, 1) for t in (f"{app_id}-in", f"{app_id}-out")]).values():
            f.result(30)
        apps = [StreamsApp(jars, broker.bootstrap, app_id, f"{app_id}-in", f"{app_id}-out", tmp_path, f"instance-{i}",
                           {"group.protocol": "streams"}) for i in range(2)]
        try:
            for app in apps:
                app.start()
            for app in apps:
                app.wait_for_state("RUNNING", 180)
            produce_keys(broker.bootstrap, f"{app_id}-in", KEYS, 2)
            deadline = time.monotonic() + 120  # both members hold their target tasks and offsets are committed
            while True:
                g = group_json(url, app_id)
                if (g["state"] == "Stable" and len(g["members"]) == 2 and g["offsets"]
                        and all(m["tasks"]["active"] for m in g["members"])):
                    break
                assert time.monotonic() < deadline, g
                time.sleep(0.5)

            with Browser(tmp_path / "chromium") as browser:
                browser.goto(url + f"#/group/{app_id}?type=streams")
                browser.wait("document.querySelectorAll('#group-members tr.streams-member').length === 2")
                processes = browser.eval("[...document.querySelectorAll('#group-members tr.streams-member')]"
                                         ".map(r => r.dataset.process)")
                assert len(set(processes)) == 2 and all(len(p) == 36 for p in processes), processes  # UUIDs
                active = browser.eval("[...document.querySelectorAll('#group-members td.active-tasks')]"
                                      ".map(td => td.textContent.split('target')[0])")
                tasks = sorted(t.strip() for cell in active for t in cell.split(",") if t.strip() != "–")
                assert tasks == sorted(f"{s}_{p}" for s in (0, 1) for p in range(PARTITIONS)), active
                assert browser.text("group-topology-status") == "ready"
                subtopologies = browser.eval("[...document.querySelectorAll('#group-topology tr.subtopology')]"
                                             ".map(r => r.textContent)")
                assert len(subtopologies) == 2, subtopologies
                assert any("repartition" in s for s in subtopologies) and any("changelog" in s for s in subtopologies)
                browser.wait("document.querySelectorAll('#group-offsets tr.offset').length > 0")
                lag = browser.eval("document.body.dataset.groupLag")
                assert lag is not None and int(lag) >= 0
                shot(browser, "streams-group")
            for app in apps:
                app.stop()
            # once the application is stopped (the group Empty), its input offsets may be reset from the console
            deadline = time.monotonic() + 120
            while (state := next(g["state"] for g in call(url, "api/groups") if g["group_id"] == app_id)) != "Empty":
                assert time.monotonic() < deadline, state
                time.sleep(0.5)
            preview = call(url, "api/group/reset-preview", {"group": app_id, "topic": f"{app_id}-in", "to": "earliest"})
            assert sum(p["lag_after"] for p in preview) == KEYS * 2
            call(url, "api/group/reset", {"group": app_id, "topic": f"{app_id}-in", "to": "earliest"})
            g = group_json(url, app_id)
            assert {(o["partition"], o["committed"], o["lag"]) for o in g["offsets"] if o["topic"] == f"{app_id}-in"} == \
                {(p["partition"], 0, p["end"]) for p in preview}
            assert g["state"] == "Empty" and g["members"] == []
        finally:
            for app in apps:
                app.stop()
