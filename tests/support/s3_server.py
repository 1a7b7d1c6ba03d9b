"""An S3-compatible server on loopback for the tests: moto in server mode.

A real HTTP server (``moto_server``) in its own process, so s3fs, botocore and
DuckDB's fsspec bridge talk to it exactly as they would to S3. Each test gets
its own bucket; credentials are moto's dummies, passed through the standard
AWS variables only.
"""

from __future__ import annotations

import secrets
import socket
import subprocess
import sys
import time
from pathlib import Path

MOTO_SERVER = Path(sys.executable).parent / "moto_server"
REGION = "us-east-1"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class MotoServer:
    def __init__(self) -> None:
        self.port = _free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self._proc: subprocess.Popen | None = None

    def start(self) -> MotoServer:
        self._proc = subprocess.Popen(
            [str(MOTO_SERVER), "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return self
            except OSError:
                assert self._proc.poll() is None, "moto_server exited at start"
                time.sleep(0.05)
        raise RuntimeError("moto_server did not start listening within 30 s")

    def stop(self) -> None:
        if self._proc is not None:
            self._proc.terminate()
            self._proc.wait(timeout=10)

    def env(self) -> dict[str, str]:
        """The standard AWS variables pointing at this server (dummy credentials)."""
        return {
            "AWS_ACCESS_KEY_ID": "testing-key-id",
            "AWS_SECRET_ACCESS_KEY": "testing-secret-key",
            "AWS_DEFAULT_REGION": REGION,
            "AWS_ENDPOINT_URL": self.endpoint,
        }

    def client(self):
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            region_name=REGION,
            aws_access_key_id="testing-key-id",
            aws_secret_access_key="testing-secret-key",
        )

    def new_bucket(self) -> str:
        bucket = f"ragproof-{secrets.token_hex(6)}"
        self.client().create_bucket(Bucket=bucket)
        return bucket

    def keys(self, bucket: str, prefix: str = "") -> list[str]:
        """Every object key under ``prefix``, sorted."""
        paginator = self.client().get_paginator("list_objects_v2")
        keys = []
        for page in paginator.paginate(Bucket=bucket, Prefix=prefix):
            keys.extend(item["Key"] for item in page.get("Contents", []))
        return sorted(keys)
