"""Replaying _schemas records: Confluent's records load, a record whose seq is not its offset (a lost race) is
skipped, soft deletes rewrite, tombstones remove every key of a version."""

from __future__ import annotations

import json

from pykbroker.schema_registry.state import RegistryState, encode_key


def schema_record(subject: str, version: int, schema_id: int, seq: int | None = None, deleted: bool = False):
    key = {"keytype": "SCHEMA", "subject": subject, "version": version, "magic": 1}
    if seq is not None:
        key |= {"seq": seq, "node": 1}
    value = {"subject": subject, "version": version, "id": schema_id, "schema": '"string"', "deleted": deleted}
    return encode_key(key), json.dumps(value).encode()


def test_confluent_records_load_and_a_lost_race_is_skipped():
    state = RegistryState()
    records = [schema_record("a", 1, 1),  # Confluent's own (no seq)
               schema_record("b", 1, 2, seq=1),
               schema_record("c", 1, 2, seq=1),  # expected offset 1, landed at 2: another writer won
               (encode_key({"keytype": "CONFIG", "subject": None, "magic": 0}), b'{"compatibilityLevel":"FULL"}'),
               (encode_key({"keytype": "NOOP", "magic": 0}), None)]
    for offset, (key, value) in enumerate(records):
        state.apply(offset, key, value)
    assert state.subjects() == ["a", "b"] and state.by_id(2).subject == "b"
    assert state.compatibility("a") == "FULL" and state.max_id() == 2 and state.next_offset == 5


def test_soft_delete_then_tombstones_of_every_key():
    state = RegistryState()
    first = schema_record("a", 1, 1, seq=0)
    soft = schema_record("a", 1, 1, seq=1, deleted=True)
    state.apply(0, *first)
    state.apply(1, *soft)
    assert state.subjects() == [] and state.subjects(deleted=True) == ["a"]
    state.apply(2, first[0], None)
    assert state.subjects(deleted=True) == ["a"]  # one key of the version is still live
    state.apply(3, soft[0], None)
    assert state.subjects(deleted=True) == [] and state.by_id(1) is None
    assert state.max_id() == 1  # a hard-deleted id is not handed out again
