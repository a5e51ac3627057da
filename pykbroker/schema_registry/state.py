"""The registry's state, rebuilt by replaying the ``_schemas`` topic: records are the truth.

Records are Confluent's (so its tools read the topic, and a topic written by Confluent's registry loads here):
JSON keys ``{"keytype": "SCHEMA", "subject": s, "version": v, "magic": 1}`` with values
``{"subject", "version", "id", "schema", "schemaType" (absent for AVRO), "references", "deleted"}``;
``{"keytype": "CONFIG", "subject": s|null, "magic": 0}`` -> ``{"compatibilityLevel": L}``;
``{"keytype": "MODE", ...}`` -> ``{"mode": M}``; ``{"keytype": "DELETE_SUBJECT", ...}`` -> ``{"subject", "version"}``
(every version up to it soft-deleted); ``NOOP``; a null value (tombstone) deletes its key.

Writes from several brokers are ordered by the topic itself, as Redpanda's registry does it: a writer puts
the offset it expects its record to land at in the key (``"seq"``, plus its ``"node"``); a record whose
``seq`` is not its offset lost a race with another writer and is skipped on every replay, so all brokers
derive the same state, and the loser tries again on the newer state. Keys differ per write, so compaction
never drops the winner for a loser; a hard delete tombstones every key that held the version.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from pykbroker.schema_registry.schemas import SchemaReference

__all__ = ["RegistryState", "StoredSchema", "encode_key"]

DEFAULT_COMPATIBILITY = "BACKWARD"
DEFAULT_MODE = "READWRITE"


def encode_key(key: dict[str, Any]) -> bytes:
    """A record key as Confluent writes it (keytype first, compact JSON)."""
    return json.dumps(key, separators=(",", ":")).encode()


@dataclass
class StoredSchema:
    """One version of one subject."""

    subject: str
    version: int
    id: int
    schema: str
    schema_type: str = "AVRO"
    references: list[SchemaReference] = field(default_factory=list)
    deleted: bool = False
    offset: int = -1
    keys: list[bytes] = field(default_factory=list)  # every live key holding this version (for tombstones)

    def to_value(self) -> dict[str, Any]:
        value: dict[str, Any] = {"subject": self.subject, "version": self.version, "id": self.id,
                                 "schema": self.schema, "deleted": self.deleted}
        if self.schema_type != "AVRO":
            value["schemaType"] = self.schema_type
        if self.references:
            value["references"] = [r.to_json() for r in self.references]
        return value


@dataclass
class RegistryState:
    """Subjects, versions, ids, configs and modes as of ``next_offset``; ``apply`` one record at a time."""

    next_offset: int = 0
    versions: dict[tuple[str, int], StoredSchema] = field(default_factory=dict)
    configs: dict[str | None, str] = field(default_factory=dict)
    modes: dict[str | None, str] = field(default_factory=dict)
    # The live keys of CONFIG and MODE records per (keytype, subject), for the tombstones of a delete.
    setting_keys: dict[tuple[str, str | None], list[bytes]] = field(default_factory=dict)
    # The highest id any record replayed so far carried, hard-deleted ones included: ids are never handed out
    # twice (a client or decoder may have cached one).
    id_high_watermark: int = 0

    def apply(self, offset: int, key: bytes | None, value: bytes | None) -> None:
        self.next_offset = offset + 1
        if key is None:
            return
        try:
            k = json.loads(key)
            v = json.loads(value) if value is not None else None
        except ValueError:
            return  # not a registry record
        if not isinstance(k, dict) or (v is not None and not isinstance(v, dict)):
            return
        if v is None:
            self._delete(key, k)
            return
        if "seq" in k and k["seq"] != offset:
            return  # lost a race with another writer: this record never happened
        kind = k.get("keytype")
        if kind == "SCHEMA":
            self._schema(key, offset, v)
        elif kind == "CONFIG":
            self.configs[k.get("subject")] = str(v.get("compatibilityLevel", DEFAULT_COMPATIBILITY))
            self._setting_key(key, "CONFIG", k.get("subject"))
        elif kind == "MODE":
            self.modes[k.get("subject")] = str(v.get("mode", DEFAULT_MODE))
            self._setting_key(key, "MODE", k.get("subject"))
        elif kind == "DELETE_SUBJECT":
            for (subject, version), s in self.versions.items():
                if subject == v.get("subject") and version <= int(v.get("version", 0)):
                    s.deleted = True

    def _schema(self, key: bytes, offset: int, v: dict[str, Any]) -> None:
        subject, version = str(v["subject"]), int(v["version"])
        self.id_high_watermark = max(self.id_high_watermark, int(v["id"]))
        refs = [SchemaReference(str(r["name"]), str(r["subject"]), int(r["version"])) for r in v.get("references") or []]
        existing = self.versions.get((subject, version))
        keys = [*existing.keys, key] if existing is not None and key not in existing.keys else \
            (existing.keys if existing is not None else [key])
        self.versions[(subject, version)] = StoredSchema(
            subject, version, int(v["id"]), str(v["schema"]), str(v.get("schemaType") or "AVRO"), refs,
            bool(v.get("deleted", False)), offset, keys)

    def _setting_key(self, key: bytes, kind: str, subject: str | None) -> None:
        keys = self.setting_keys.setdefault((kind, subject), [])
        if key not in keys:
            keys.append(key)

    def keys_of(self, kind: str, subject: str | None) -> list[bytes]:
        """The live keys of ``kind`` (CONFIG or MODE) records of ``subject``."""
        return list(self.setting_keys.get((kind, subject), []))

    def _delete(self, key: bytes, k: dict[str, Any]) -> None:
        kind = k.get("keytype")
        if kind == "SCHEMA":
            found = self.versions.get((str(k.get("subject")), int(k.get("version", -1))))
            if found is not None and key in found.keys:
                found.keys.remove(key)
                if not found.keys:
                    del self.versions[(found.subject, found.version)]
        elif kind in ("CONFIG", "MODE"):
            subject = k.get("subject")
            keys = self.setting_keys.get((kind, subject), [])
            if key in keys:
                keys.remove(key)
            if not keys:
                self.setting_keys.pop((kind, subject), None)
                (self.configs if kind == "CONFIG" else self.modes).pop(subject, None)

    # -- reads --------------------------------------------------------------------------------------------

    def subjects(self, deleted: bool = False) -> list[str]:
        return sorted({s.subject for s in self.versions.values() if deleted or not s.deleted})

    def subject_versions(self, subject: str, deleted: bool = False) -> list[StoredSchema]:
        return sorted((s for (name, _), s in self.versions.items() if name == subject and (deleted or not s.deleted)),
                      key=lambda s: s.version)

    def by_id(self, schema_id: int) -> StoredSchema | None:
        """The schema of ``schema_id`` (any subject holding it, soft-deleted too, as Confluent answers)."""
        found = [s for s in self.versions.values() if s.id == schema_id]
        found.sort(key=lambda s: (s.deleted, s.offset))
        return found[0] if found else None

    def max_id(self) -> int:
        """The highest id handed out (a hard-deleted one included, while its records are in the log)."""
        return max(self.id_high_watermark, max((s.id for s in self.versions.values()), default=0))

    def compatibility(self, subject: str | None) -> str:
        if subject is not None and subject in self.configs:
            return self.configs[subject]
        return self.configs.get(None, DEFAULT_COMPATIBILITY)

    def mode(self, subject: str | None) -> str:
        if subject is not None and subject in self.modes:
            return self.modes[subject]
        return self.modes.get(None, DEFAULT_MODE)
