"""``S3ObjectStore``: the ``ObjectStore`` interface over an S3-compatible server, through boto3.

Path-style addressing (what self-hosted servers serve), the bucket created on first use when missing, ranged
GETs for reads, multipart uploads for large files (boto3's transfer manager). Connection failures, timeouts and
5xx answers become ``ObjectStoreUnavailableError`` (the caller waits and retries); a missing key
``ObjectNotFoundError``. Credentials are kept in the boto3 client only: ``repr`` and every error message leave
them out. One client, shared by threads (boto3 clients are thread-safe).
"""

from __future__ import annotations

import logging
from typing import Any

from storage.remote.object_store import ObjectNotFoundError, ObjectStoreError, ObjectStoreUnavailableError

log = logging.getLogger("storage.remote.s3")

__all__ = ["S3ObjectStore"]

_NOT_FOUND = {"404", "NoSuchKey", "NotFound"}


class S3ObjectStore:
    """Objects in one bucket of an S3-compatible server (see the module docstring)."""

    def __init__(self, *, endpoint: str, bucket: str, region: str = "us-east-1", access_key: str | None = None,
                 secret_key: str | None = None, prefix: str = "", connect_timeout_s: float = 5.0,
                 read_timeout_s: float = 30.0) -> None:
        import boto3
        from botocore.config import Config as BotoConfig

        self.endpoint = endpoint
        self.bucket = bucket
        self.prefix = prefix
        self._client: Any = boto3.session.Session().client(
            "s3", endpoint_url=endpoint, region_name=region, aws_access_key_id=access_key,
            aws_secret_access_key=secret_key,
            config=BotoConfig(s3={"addressing_style": "path"}, connect_timeout=connect_timeout_s,
                              read_timeout=read_timeout_s, retries={"max_attempts": 2, "mode": "standard"},
                              request_checksum_calculation="when_required",
                              response_checksum_validation="when_required"))
        self._bucket_checked = False

    def __repr__(self) -> str:  # no credentials
        return f"S3ObjectStore(endpoint={self.endpoint!r}, bucket={self.bucket!r})"

    def _key(self, key: str) -> str:
        return self.prefix + key

    def _call(self, what: str, fn: Any, **kwargs: Any) -> Any:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            return fn(**kwargs)
        except ClientError as exc:
            code = str(exc.response.get("Error", {}).get("Code", ""))
            status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
            if code in _NOT_FOUND:
                raise ObjectNotFoundError(kwargs.get("Key", what)) from None
            if status >= 500 or code in ("SlowDown", "ServiceUnavailable", "RequestTimeout"):
                raise ObjectStoreUnavailableError(f"{what} on {self.endpoint}: {code} ({status})") from None
            raise ObjectStoreError(f"{what} on {self.endpoint}: {code} ({status})") from None
        except BotoCoreError as exc:  # connection refused, timeouts, DNS: the store is not reachable
            raise ObjectStoreUnavailableError(f"{what} on {self.endpoint}: {type(exc).__name__}") from None

    def _ensure_bucket(self) -> None:
        if self._bucket_checked:
            return
        try:
            self._call("HeadBucket", self._client.head_bucket, Bucket=self.bucket)
        except ObjectNotFoundError:
            log.info("creating bucket %s on %s", self.bucket, self.endpoint)
            try:
                self._call("CreateBucket", self._client.create_bucket, Bucket=self.bucket)
            except ObjectStoreError as exc:
                if "BucketAlreadyOwnedByYou" not in str(exc) and "BucketAlreadyExists" not in str(exc):
                    raise
        self._bucket_checked = True

    def put(self, key: str, data: bytes) -> None:
        self._ensure_bucket()
        self._call("PutObject", self._client.put_object, Bucket=self.bucket, Key=self._key(key), Body=data)

    def put_file(self, key: str, path: str) -> None:
        self._ensure_bucket()
        self._call("PutObject", self._client.upload_file, Filename=path, Bucket=self.bucket, Key=self._key(key))

    def get(self, key: str, start: int = 0, end: int | None = None) -> bytes:
        self._ensure_bucket()
        if end is not None and end <= start:
            return b""
        kwargs: dict[str, Any] = {"Bucket": self.bucket, "Key": self._key(key)}
        if start or end is not None:
            kwargs["Range"] = f"bytes={start}-" + ("" if end is None else str(end - 1))
        response = self._call("GetObject", self._client.get_object, **kwargs)
        from botocore.exceptions import BotoCoreError

        try:
            return response["Body"].read()
        except BotoCoreError as exc:
            raise ObjectStoreUnavailableError(f"GetObject on {self.endpoint}: {type(exc).__name__}") from None

    def size(self, key: str) -> int:
        self._ensure_bucket()
        return int(self._call("HeadObject", self._client.head_object, Bucket=self.bucket,
                              Key=self._key(key))["ContentLength"])

    def delete(self, key: str) -> None:
        self._ensure_bucket()
        self._call("DeleteObject", self._client.delete_object, Bucket=self.bucket, Key=self._key(key))

    def list(self, prefix: str = "") -> list[str]:
        self._ensure_bucket()
        out: list[str] = []
        token = None
        while True:
            kwargs: dict[str, Any] = {"Bucket": self.bucket, "Prefix": self._key(prefix)}
            if token:
                kwargs["ContinuationToken"] = token
            page = self._call("ListObjectsV2", self._client.list_objects_v2, **kwargs)
            out += [o["Key"][len(self.prefix):] for o in page.get("Contents", [])]
            if not page.get("IsTruncated"):
                return sorted(out)
            token = page.get("NextContinuationToken")
