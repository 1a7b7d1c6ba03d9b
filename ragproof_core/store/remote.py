"""Where the store lives: a local folder, or an fsspec URL on object storage.

``RAGPROOF_STORE`` is a path (``data/store``) or a URL such as
``s3://bucket/prefix`` (s3fs), ``gs://bucket/prefix`` (gcsfs) or
``az://container/prefix`` (adlfs). Credentials are never part of the URL or
of anything ragproof writes: s3fs reads ``AWS_ACCESS_KEY_ID``,
``AWS_SECRET_ACCESS_KEY``, ``AWS_DEFAULT_REGION`` and ``AWS_ENDPOINT_URL``
itself (through botocore); gcsfs and adlfs read their own standard variables.

``memory://`` (fsspec's in-process filesystem) is accepted too: the tests
use it to run the object-store code paths without a server.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

# Protocols whose fsspec filesystems have no rename and no locks: the store
# writes each object once and never renames (``object_files.py``).
REMOTE_PROTOCOLS: frozenset[str] = frozenset(
    {"s3", "s3a", "gs", "gcs", "az", "abfs", "abfss", "memory"}
)
_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://(.*)$")


class StoreLocationError(ValueError):
    """RAGPROOF_STORE names a URL ragproof cannot use."""


def split_url(location: str | Path) -> tuple[str, str] | None:
    """``("s3", "bucket/prefix")`` for a remote URL, None for a local path."""
    if isinstance(location, Path):
        return None
    match = _URL.match(str(location))
    if match is None or match.group(1).lower() == "file":
        return None
    protocol, path = match.group(1).lower(), match.group(2).strip("/")
    if protocol not in REMOTE_PROTOCOLS:
        raise StoreLocationError(
            f"RAGPROOF_STORE {location!r}: unsupported protocol {protocol!r}; use a local path "
            "or s3://, gs://, az:// (install s3fs, gcsfs or adlfs)"
        )
    if not path:
        raise StoreLocationError(f"RAGPROOF_STORE {location!r}: name a bucket (and a prefix)")
    return protocol, path


def is_remote(location: str | Path) -> bool:
    return split_url(location) is not None


def local_path(location: str | Path) -> Path:
    """A ``file://`` URL or a plain path as a Path."""
    text = str(location)
    return Path(text[len("file://") :] if text.startswith("file://") else text)


def _filesystem_options(protocol: str, env: dict[str, str]) -> dict[str, Any]:
    if protocol not in ("s3", "s3a"):
        return {}
    # Listings are cached by s3fs per instance; a store shared by many processes
    # must see the others' objects on every listing.
    options: dict[str, Any] = {"use_listings_cache": False}
    # Recent botocore reads AWS_ENDPOINT_URL itself (checked against moto's
    # server); passing it explicitly keeps older botocore pointed at the same place.
    endpoint = env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL")
    if endpoint:
        options["endpoint_url"] = endpoint
    return options


def open_filesystem(protocol: str, env: dict[str, str] | None = None):
    """A fresh fsspec filesystem for ``protocol``, configured from the environment only."""
    # Lazy: only a store on object storage needs fsspec, and local stores start faster.
    import fsspec

    environ = dict(os.environ if env is None else env)
    try:
        cls = fsspec.get_filesystem_class(protocol)
    except (ImportError, ValueError) as exc:
        raise StoreLocationError(
            f"RAGPROOF_STORE {protocol}://...: the fsspec filesystem for {protocol!r} is not "
            f"installed ({exc})"
        ) from exc
    # A fresh instance: fsspec's instance cache would share one across forked workers.
    return cls(skip_instance_cache=True, **_filesystem_options(protocol, environ))
