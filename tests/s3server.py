"""A real S3-compatible HTTP server on loopback for the storage tests: moto's server in its own process."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

BUCKET = "lsl-uploads"
KEYS = {"STORAGE_S3_ACCESS_KEY_ID": "testing", "STORAGE_S3_SECRET_ACCESS_KEY": "testing"}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def s3_server() -> Iterator[str]:
    """Start moto's S3 server, create the bucket, yield its endpoint URL; stop it afterwards."""
    import boto3

    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    endpoint = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError("moto's S3 server did not start") from None
                time.sleep(0.1)
        client = boto3.client(
            "s3",
            endpoint_url=endpoint,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
            region_name="us-east-1",
        )
        client.create_bucket(Bucket=BUCKET)
        yield endpoint
    finally:
        server.terminate()
        server.wait(timeout=10)


def s3_env(endpoint: str) -> dict[str, str]:
    """The environment that points the app's uploads at the server's bucket."""
    return {"STORAGE_S3_BUCKET": BUCKET, "STORAGE_S3_ENDPOINT_URL": endpoint, "STORAGE_S3_REGION": "us-east-1", **KEYS}


def s3_storages(endpoint: str) -> dict:
    """The STORAGES setting for the server's bucket (what settings.py builds from :func:`s3_env`)."""
    return {
        "default": {
            "BACKEND": "storages.backends.s3.S3Storage",
            "OPTIONS": {
                "bucket_name": BUCKET,
                "endpoint_url": endpoint,
                "region_name": "us-east-1",
                "access_key": "testing",
                "secret_key": "testing",
                "addressing_style": "path",
                "default_acl": None,
                "file_overwrite": False,
            },
        },
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }


def bucket_keys(endpoint: str) -> list[str]:
    import boto3

    client = boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name="us-east-1",
    )
    return [item["Key"] for item in client.list_objects_v2(Bucket=BUCKET).get("Contents", [])]
