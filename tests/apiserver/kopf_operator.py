"""A tiny Kopf operator for the emulated server's tests: every kind of handler Kopf
has, on the Widget CRD of conftest.py."""

from __future__ import annotations

import kopf


@kopf.on.login()
def login(**kwargs: object) -> kopf.ConnectionInfo | None:
    # Kopf's own kubeconfig reader, which reads $KUBECONFIG when called (the client
    # library's reads it once, when first imported)
    return kopf.login_with_kubeconfig(**kwargs)  # type: ignore[arg-type]


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: object) -> None:
    settings.persistence.finalizer = "example.io/kopf-finalizer"
    settings.posting.level = 0  # post every event
    settings.watching.server_timeout = 10


@kopf.on.create("example.io", "v1", "widgets")
def created(spec: kopf.Spec, name: str, logger: kopf.Logger, **_: object) -> dict[str, object]:
    kopf.info({"metadata": {"name": name}}, reason="Created", message=f"size {spec['size']}")
    logger.info("created %s", name)
    return {"seen": spec["size"]}


@kopf.on.update("example.io", "v1", "widgets", field="spec.size")
def resized(new: object, patch: kopf.Patch, **_: object) -> None:
    patch.status["phase"] = f"resized to {new}"


@kopf.on.delete("example.io", "v1", "widgets")
def deleted(name: str, logger: kopf.Logger, **_: object) -> None:
    logger.info("deleted %s", name)


@kopf.timer("example.io", "v1", "widgets", interval=0.5)
def ticking(patch: kopf.Patch, status: kopf.Status, **_: object) -> None:
    patch.status["ticks"] = int(status.get("ticks", 0)) + 1
