"""Where snapshots live: a folder (local or mounted), S3-compatible object storage, or an http(s)://
copy of the published files (read-only: any static file server, a CDN, a bucket's public URL).

Every place answers the same few questions: read a small file conditionally (the manifest: a
validator from the last read turns an unchanged one into "not modified"), download a file to disk,
and for publishing targets upload a file, write a small one atomically, list and delete. Errors
become `StorageError`, one line naming the place (credentials masked) and the reason.

- Folder: files are written to a temp name and renamed, so a reader sees a whole file or none;
  the validator is the manifest's inode, mtime and size.
- S3: boto3 (`GPUPRICE_S3_ENDPOINT_URL`, `GPUPRICE_S3_REGION`, `GPUPRICE_S3_ACCESS_KEY_ID`, …, else
  botocore's own chain; no credentials at all: unsigned requests, for public buckets). A PUT is atomic;
  the validator is the ETag (`If-None-Match`, 304).
- HTTP: httpx; `If-None-Match` when the server gave an ETag, `If-Modified-Since` only when its
  Last-Modified is at least a second older than its Date (RFC 9110: a one-second clock cannot tell two
  changes in the same second apart, so a younger one is no validator)."""

from __future__ import annotations

import hashlib
import os
import shutil
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit

import httpx

from pricedb import redact, tls
from pricedb.files import atomic_write
from pricedb.settings import Settings
from pricedb.version import VERSION

CHUNK = 1 << 20


class StorageError(RuntimeError):
    """A snapshot place could not be read or written: `str()` is one line, credentials masked."""

    def __init__(self, where: str, reason: str) -> None:
        super().__init__(redact.redact(f"{where}: {reason}"))


@dataclass(frozen=True)
class Fetched:
    """A small file read conditionally: `body` None means not modified since `validator`, or missing."""

    body: bytes | None
    validator: str | None
    missing: bool = False


class Storage(Protocol):
    where: str  # the place as people write it, credentials masked

    def read(self, name: str, validator: str | None = None) -> Fetched: ...

    def download(self, name: str, dest: Path) -> None: ...


class Target(Storage, Protocol):
    def upload(self, name: str, source: Path) -> None: ...

    def write(self, name: str, body: bytes) -> None: ...

    def list(self, folder: str) -> list[str]: ...

    def delete(self, names: list[str]) -> None: ...


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


# ----- a folder ------------------------------------------------------------------------------------
class FolderStorage:
    def __init__(self, root: Path, writable: bool = False) -> None:
        self.root, self.writable = root, writable  # a target's folder is made at its first write
        self.where = str(root)

    def _path(self, name: str) -> Path:
        return self.root / name

    def read(self, name: str, validator: str | None = None) -> Fetched:
        path = self._path(name)
        try:
            with path.open("rb") as handle:
                info = os.fstat(handle.fileno())
                stamp = f"{info.st_ino}-{info.st_mtime_ns}-{info.st_size}"
                if stamp == validator:
                    return Fetched(None, validator)
                return Fetched(handle.read(), stamp)
        except FileNotFoundError:
            if not self.writable and not self.root.is_dir():
                raise StorageError(self.where, "no such folder") from None
            return Fetched(None, None, missing=True)
        except OSError as exc:
            raise StorageError(self.where, f"{exc.strerror or exc} ({name})") from None

    def download(self, name: str, dest: Path) -> None:
        try:
            shutil.copyfile(self._path(name), dest)
        except OSError as exc:
            raise StorageError(self.where, f"{exc.strerror or exc} ({name})") from None

    def upload(self, name: str, source: Path) -> None:
        try:
            atomic_write(self._path(name), lambda temp: shutil.copyfile(source, temp))
        except OSError as exc:
            raise StorageError(self.where, f"{exc.strerror or exc} ({name})") from None

    def write(self, name: str, body: bytes) -> None:
        try:
            atomic_write(self._path(name), lambda temp: temp.write_bytes(body))
        except OSError as exc:
            raise StorageError(self.where, f"{exc.strerror or exc} ({name})") from None

    def list(self, folder: str) -> list[str]:
        base = self._path(folder)
        if not base.is_dir():
            return []
        return sorted(
            p.relative_to(self.root).as_posix() for p in base.rglob("*") if p.is_file() and not p.name.startswith(".")
        )

    def delete(self, names: list[str]) -> None:
        for name in names:
            try:
                self._path(name).unlink(missing_ok=True)
            except OSError as exc:
                raise StorageError(self.where, f"{exc.strerror or exc} ({name})") from None


# ----- S3-compatible object storage ---------------------------------------------------------------------
def s3_client(settings: Settings, attempts: int | None = None) -> Any:
    """A boto3 S3 client from the settings; credentials it finds are taught to the redaction point.
    `attempts`: tries per request (default GPUPRICE_RETRY_ATTEMPTS); a replica, which looks again at
    its next poll anyway, tries once more at most rather than stalling on a source that is down."""
    import boto3
    from botocore import UNSIGNED
    from botocore.config import Config

    def secret(value: Any) -> str | None:
        return value.get_secret_value() if value is not None else None

    session = boto3.session.Session(
        aws_access_key_id=secret(settings.s3_access_key_id),
        aws_secret_access_key=secret(settings.s3_secret_access_key),
        aws_session_token=secret(settings.s3_session_token),
        region_name=settings.s3_region,
    )
    credentials = session.get_credentials()
    options: dict[str, Any] = {
        "s3": {"addressing_style": settings.s3_addressing_style},
        "retries": {"max_attempts": max(1, attempts or settings.retry_attempts), "mode": "standard"},
        "connect_timeout": settings.http_timeout_s,
        "read_timeout": settings.http_timeout_s,
        "user_agent_extra": f"gpuprice/{VERSION}",
    }
    if credentials is None:
        options["signature_version"] = UNSIGNED  # a public bucket
    else:
        frozen = credentials.get_frozen_credentials()
        redact.learn(frozen.access_key, frozen.secret_key, frozen.token)
    return session.client("s3", endpoint_url=settings.s3_endpoint_url, config=Config(**options))


class S3Storage:
    def __init__(self, bucket: str, prefix: str, client: Any) -> None:
        self.bucket, self.prefix, self.client = bucket, prefix.strip("/"), client
        self.where = f"s3://{bucket}/{self.prefix}".rstrip("/")

    def _key(self, name: str) -> str:
        return f"{self.prefix}/{name}" if self.prefix else name

    def _failed(self, exc: Exception, name: str) -> StorageError:
        from botocore.exceptions import ClientError

        if isinstance(exc, ClientError):
            error = exc.response.get("Error", {})
            reason = f"{error.get('Code', 'error')}: {error.get('Message', '')}".rstrip(": ")
        else:
            reason = f"{type(exc).__name__}: {exc}"
        return StorageError(self.where, f"{reason} ({name})")

    def read(self, name: str, validator: str | None = None) -> Fetched:
        from botocore.exceptions import BotoCoreError, ClientError

        extra = {"IfNoneMatch": validator} if validator else {}
        try:
            answer = self.client.get_object(Bucket=self.bucket, Key=self._key(name), **extra)
            return Fetched(answer["Body"].read(), answer.get("ETag"))
        except ClientError as exc:
            status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            code = exc.response.get("Error", {}).get("Code")
            if status == 304 or code in ("304", "NotModified"):
                return Fetched(None, validator)
            if code in ("NoSuchKey", "404"):
                return Fetched(None, None, missing=True)
            raise self._failed(exc, name) from None
        except BotoCoreError as exc:
            raise self._failed(exc, name) from None

    def download(self, name: str, dest: Path) -> None:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            answer = self.client.get_object(Bucket=self.bucket, Key=self._key(name))
            with dest.open("wb") as handle:
                for chunk in answer["Body"].iter_chunks(CHUNK):
                    handle.write(chunk)
        except (BotoCoreError, ClientError) as exc:
            raise self._failed(exc, name) from None

    def upload(self, name: str, source: Path) -> None:
        from boto3.exceptions import S3UploadFailedError
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            self.client.upload_file(str(source), self.bucket, self._key(name))
        except (BotoCoreError, ClientError, S3UploadFailedError) as exc:
            raise self._failed(exc, name) from None

    def write(self, name: str, body: bytes) -> None:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            self.client.put_object(Bucket=self.bucket, Key=self._key(name), Body=body)
        except (BotoCoreError, ClientError) as exc:
            raise self._failed(exc, name) from None

    def list(self, folder: str) -> list[str]:
        from botocore.exceptions import BotoCoreError, ClientError

        names: list[str] = []
        start = self._key(folder).rstrip("/") + "/"
        try:
            for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=start):
                for item in page.get("Contents", []):
                    key = item["Key"]
                    names.append(key[len(self.prefix) + 1 :] if self.prefix else key)
        except (BotoCoreError, ClientError) as exc:
            raise self._failed(exc, folder) from None
        return sorted(names)

    def delete(self, names: list[str]) -> None:
        from botocore.exceptions import BotoCoreError, ClientError

        for start in range(0, len(names), 1000):  # DeleteObjects takes at most 1,000 keys
            batch = [{"Key": self._key(n)} for n in names[start : start + 1000]]
            try:
                self.client.delete_objects(Bucket=self.bucket, Delete={"Objects": batch, "Quiet": True})
            except (BotoCoreError, ClientError) as exc:
                raise self._failed(exc, names[start]) from None


# ----- an http(s):// copy (read-only) ----------------------------------------------------------------------
class HttpStorage:
    def __init__(self, base_url: str, settings: Settings) -> None:
        self.base = base_url.rstrip("/") + "/"
        self.where = redact.redact(base_url.rstrip("/"))
        self.client = httpx.Client(
            timeout=settings.http_timeout_s,
            headers={"User-Agent": f"gpuprice/{VERSION} (replica)"},
            follow_redirects=True,
            verify=tls.client_context(),
        )

    def read(self, name: str, validator: str | None = None) -> Fetched:
        headers = {}
        if validator:
            kind, _, value = validator.partition(" ")
            headers["If-None-Match" if kind == "etag" else "If-Modified-Since"] = value
        try:
            answer = self.client.get(self.base + name, headers=headers)
        except httpx.HTTPError as exc:
            raise StorageError(self.where, f"{type(exc).__name__}: {exc} ({name})") from None
        if answer.status_code == 304:
            return Fetched(None, validator)
        if answer.status_code == 404:
            return Fetched(None, None, missing=True)
        if answer.status_code != 200:
            raise StorageError(self.where, f"HTTP {answer.status_code} ({name})")
        return Fetched(answer.content, _http_validator(answer.headers))

    def download(self, name: str, dest: Path) -> None:
        try:
            with self.client.stream("GET", self.base + name) as answer:
                if answer.status_code != 200:
                    raise StorageError(self.where, f"HTTP {answer.status_code} ({name})")
                with dest.open("wb") as handle:
                    for chunk in answer.iter_bytes(CHUNK):
                        handle.write(chunk)
        except httpx.HTTPError as exc:
            raise StorageError(self.where, f"{type(exc).__name__}: {exc} ({name})") from None


def _http_validator(headers: httpx.Headers) -> str | None:
    if etag := headers.get("etag"):
        return f"etag {etag}"
    modified, said = headers.get("last-modified"), headers.get("date")
    if not modified or not said:
        return None
    try:
        if (parsedate_to_datetime(said) - parsedate_to_datetime(modified)).total_seconds() >= 1:
            return f"modified {modified}"
    except (TypeError, ValueError):
        return None
    return None


# ----- from a URL or path ---------------------------------------------------------------------------------
def open_storage(place: str, settings: Settings, writable: bool = False) -> Target | Storage:
    """`place`: a folder (a path or file://…), s3://bucket/prefix, or (not `writable`) http(s)://…"""
    parts = urlsplit(place)
    if parts.scheme == "s3":
        if not parts.netloc:
            raise ValueError(f"{redact.redact(place)}: no bucket (write s3://bucket/prefix)")
        return S3Storage(parts.netloc, parts.path, s3_client(settings, None if writable else 2))
    if parts.scheme in ("http", "https"):
        if writable:
            raise ValueError(f"{redact.redact(place)}: cannot publish to a web server; publish to a folder it serves")
        return HttpStorage(place, settings)
    if parts.scheme == "file":
        return FolderStorage(Path(parts.path), writable)
    if parts.scheme and len(parts.scheme) > 1:  # one letter: a Windows drive
        raise ValueError(f"{redact.redact(place)}: not a folder, s3:// or http(s):// URL")
    return FolderStorage(Path(place).expanduser(), writable)
