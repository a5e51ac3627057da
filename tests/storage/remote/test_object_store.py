"""The object-store contract, run on every backend: the directory one always, S3 on a real server when it is
installed (tests/s3_server.py; `make deps` builds it)."""

from __future__ import annotations

import pytest

from storage.remote.object_store import LocalFileObjectStore, ObjectNotFoundError, ObjectStoreUnavailableError
from tests.s3_server import S3Server, s3_server_available


@pytest.fixture(params=["dir", "s3"])
def store(request, tmp_path):
    if request.param == "dir":
        yield LocalFileObjectStore(str(tmp_path / "objects"))
        return
    if not s3_server_available():
        pytest.skip("no S3 server installed (make deps builds versitygw)")
    with S3Server(tmp_path / "s3") as server:
        yield server.object_store("bucket-a")


def test_put_get_ranges_list_delete(store, tmp_path):
    store.put("t-0/a.log", b"0123456789")
    source = tmp_path / "file"
    source.write_bytes(b"x" * 300_000)
    store.put_file("t-0/b.index", str(source))
    assert store.get("t-0/a.log") == b"0123456789"
    assert store.get("t-0/a.log", 2, 5) == b"234"
    assert store.get("t-0/a.log", 7) == b"789"
    assert store.size("t-0/b.index") == 300_000
    assert store.list("t-0/") == ["t-0/a.log", "t-0/b.index"]
    store.delete("t-0/a.log")
    store.delete("t-0/a.log")  # gone already: no error
    assert store.list() == ["t-0/b.index"]
    with pytest.raises(ObjectNotFoundError):
        store.get("t-0/a.log")
    with pytest.raises(ObjectNotFoundError):
        store.size("nothing")


def test_an_interrupted_put_leaves_nothing_listed(tmp_path):
    store = LocalFileObjectStore(str(tmp_path / "objects"))
    (tmp_path / "objects" / "t-0").mkdir(parents=True)
    (tmp_path / "objects" / "t-0" / "a.log.123.uploading").write_bytes(b"half")  # what a kill -9 leaves
    assert store.list() == []


def test_an_unmounted_directory_is_unavailable_not_recreated(tmp_path):
    store = LocalFileObjectStore(str(tmp_path / "objects"))
    (tmp_path / "objects").rmdir()
    with pytest.raises(ObjectStoreUnavailableError):
        store.put("a", b"x")
    assert not (tmp_path / "objects").exists()
