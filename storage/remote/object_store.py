"""Object stores: the small interface the remote tier (and Iceberg topics) write objects through.

An ``ObjectStore`` holds immutable objects under string keys (``a/b/c``): whole puts, ranged gets, deletes and
listings — what S3 offers, and all the remote tier needs. Two implementations: ``LocalFileObjectStore`` (a
directory, local or mounted; one file per key, written to a temporary name and renamed, so a reader or a
listing never sees half an object) and ``S3ObjectStore`` in ``storage.remote.s3`` (any S3-compatible server).

Errors: ``ObjectNotFoundError`` for a key that is not there; ``ObjectStoreUnavailableError`` when the store
cannot be reached (the caller retries later and loses nothing). Every method blocks: callers on the event loop
run them in a thread. Implementations are safe to call from several threads.
"""

from __future__ import annotations

import os
import tempfile
from typing import Protocol

__all__ = ["LocalFileObjectStore", "ObjectNotFoundError", "ObjectStore", "ObjectStoreError",
           "ObjectStoreUnavailableError"]


class ObjectStoreError(Exception):
    """An object store operation failed."""


class ObjectNotFoundError(ObjectStoreError):
    """The key names no object."""


class ObjectStoreUnavailableError(ObjectStoreError):
    """The store cannot be reached or refused the request for now; retry later."""


class ObjectStore(Protocol):
    """Immutable objects by key (see the module docstring)."""

    def put(self, key: str, data: bytes) -> None:
        """Store ``data`` under ``key`` (replacing an object already there)."""

    def put_file(self, key: str, path: str) -> None:
        """Store the content of the local file ``path`` under ``key``."""

    def get(self, key: str, start: int = 0, end: int | None = None) -> bytes:
        """Bytes [start, end) of the object (end None: to its end); ObjectNotFoundError when absent."""

    def size(self, key: str) -> int:
        """The object's size in bytes; ObjectNotFoundError when absent."""

    def delete(self, key: str) -> None:
        """Remove the object; no error when it is already gone."""

    def list(self, prefix: str = "") -> list[str]:
        """Keys starting with ``prefix``, sorted."""


_TMP_SUFFIX = ".uploading"


class LocalFileObjectStore:
    """An ``ObjectStore`` in a directory: key ``a/b`` is the file ``<root>/a/b``.

    A put writes ``<name>.<random>.uploading`` next to the target, fsyncs it and renames it into place: a
    process killed mid-put leaves only a temporary file, which no listing or get returns.
    """

    def __init__(self, root: str) -> None:
        self.root = os.path.abspath(root)
        os.makedirs(self.root, exist_ok=True)

    def __repr__(self) -> str:
        return f"LocalFileObjectStore({self.root!r})"

    def _path(self, key: str) -> str:
        path = os.path.normpath(os.path.join(self.root, key))
        if not path.startswith(self.root + os.sep):
            raise ObjectStoreError(f"key {key!r} leaves the store's directory")
        return path

    def _check_reachable(self) -> None:
        if not os.path.isdir(self.root):  # an unmounted path: retry later, never create it elsewhere
            raise ObjectStoreUnavailableError(f"the remote storage directory {self.root} is not there")

    def put(self, key: str, data: bytes) -> None:
        self._write(key, lambda f: f.write(data))

    def put_file(self, key: str, path: str) -> None:
        def copy(out) -> None:
            with open(path, "rb") as src:
                while chunk := src.read(1 << 20):
                    out.write(chunk)
        self._write(key, copy)

    def _write(self, key: str, fill) -> None:
        self._check_reachable()
        target = self._path(key)
        try:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=os.path.basename(target) + ".", suffix=_TMP_SUFFIX,
                                       dir=os.path.dirname(target))
        except OSError as exc:
            raise ObjectStoreUnavailableError(f"cannot write {key}: {exc}") from exc
        try:
            with os.fdopen(fd, "wb") as out:
                fill(out)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, target)
        except BaseException as exc:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            if isinstance(exc, OSError):
                raise ObjectStoreUnavailableError(f"cannot write {key}: {exc}") from exc
            raise

    def get(self, key: str, start: int = 0, end: int | None = None) -> bytes:
        self._check_reachable()
        try:
            with open(self._path(key), "rb") as f:
                f.seek(start)
                return f.read() if end is None else f.read(max(0, end - start))
        except FileNotFoundError:
            raise ObjectNotFoundError(key) from None
        except OSError as exc:
            raise ObjectStoreUnavailableError(f"cannot read {key}: {exc}") from exc

    def size(self, key: str) -> int:
        self._check_reachable()
        try:
            return os.path.getsize(self._path(key))
        except FileNotFoundError:
            raise ObjectNotFoundError(key) from None

    def delete(self, key: str) -> None:
        self._check_reachable()
        path = self._path(key)
        try:
            os.unlink(path)
        except FileNotFoundError:
            return
        except OSError as exc:
            raise ObjectStoreUnavailableError(f"cannot delete {key}: {exc}") from exc
        parent = os.path.dirname(path)
        while parent != self.root:  # empty directories go with their last object
            try:
                os.rmdir(parent)
            except OSError:
                break
            parent = os.path.dirname(parent)

    def list(self, prefix: str = "") -> list[str]:
        self._check_reachable()
        out = []
        for dirpath, _, files in os.walk(self.root):
            for name in files:
                if name.endswith(_TMP_SUFFIX):
                    continue
                key = os.path.relpath(os.path.join(dirpath, name), self.root).replace(os.sep, "/")
                if key.startswith(prefix):
                    out.append(key)
        return sorted(out)
