"""The kubeconfig clients use to reach the emulated server: its address and the
bearer token it demands."""

from __future__ import annotations

import base64
import os
import secrets
from pathlib import Path

import yaml

CONTEXT = "leasehold-emulated"


def new_token() -> str:
    return secrets.token_urlsafe(32)


def kubeconfig(server: str, token: str, ca: Path, namespace: str = "default"
               ) -> dict[str, object]:
    authority = base64.b64encode(ca.read_bytes()).decode()
    return {
        "apiVersion": "v1", "kind": "Config", "preferences": {},
        "clusters": [{"name": CONTEXT, "cluster": {
            "server": server, "certificate-authority-data": authority}}],
        "users": [{"name": CONTEXT, "user": {"token": token}}],
        "contexts": [{"name": CONTEXT, "context": {"cluster": CONTEXT, "user": CONTEXT,
                                                  "namespace": namespace}}],
        "current-context": CONTEXT,
    }


def write_kubeconfig(path: Path, server: str, token: str, ca: Path) -> Path:
    """Write it readable by its owner only: it holds the token."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        yaml.safe_dump(kubeconfig(server, token, ca), fh, sort_keys=False)
    tmp.replace(path)
    return path
