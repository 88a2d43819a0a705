"""A Lease's image on its pods (issue 22 item 6, the contract with the emulated
kubelet): the VM pods of a Lease with ``image`` carry ``leasehold.io/image`` and
``leasehold.io/image-size-mb``; without a template the VM's placeholder container runs
that image instead of pause, with one the template's containers are kept as they are
(a tenant's image is the tenant's). The image is tenant input: one a kubelet could not
parse rejects its Lease, with what to write, and no other Lease's pods are touched."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

import pytest

from leasehold.api.clock import Clock
from leasehold.api.podpolicy import image_problem
from leasehold.api.resources import LeaseInputError, lease_spec
from leasehold.core.model import Origin, PoolSpec, SchedulerConfig
from leasehold.kube.capacity import ClusterPool
from leasehold.kube.client import KubeClient, KubeError
from leasehold.kube.pods import API_VERSION, IMAGE, IMAGE_SIZE, PLACEHOLDER, build
from leasehold.kube.shell import Shell

TEMPLATE = {"spec": {"containers": [{"name": "work", "image": "ghcr.io/lab/solver:2"}]}}


def _pod(template: dict[str, Any] | None, image: str | None, image_mb: float = 0.0
         ) -> dict[str, Any]:
    return build("lab", "a", "uid-a", template, 0, "n-0", 1000, 1024, {}, image=image,
                 image_mb=image_mb)


@pytest.mark.parametrize(("template", "image", "mb", "runs", "notes"), [
    pytest.param(None, None, 0.0, [PLACEHOLDER["image"]], {}, id="no-image-pause"),
    pytest.param(None, "centos", 4096.0, ["centos"],
                 {IMAGE: "centos", IMAGE_SIZE: "4096"}, id="placeholder-runs-the-image"),
    pytest.param(None, "registry.example.com/vms/centos:7", 0.5,
                 ["registry.example.com/vms/centos:7"],
                 {IMAGE: "registry.example.com/vms/centos:7", IMAGE_SIZE: "0.5"},
                 id="fractional-size"),
    pytest.param(None, "centos", 0.0, ["centos"], {IMAGE: "centos", IMAGE_SIZE: "0"},
                 id="no-size-nothing-to-transfer"),
    pytest.param(None, "centos", 1e-7, ["centos"], {IMAGE: "centos", IMAGE_SIZE: "0"},
                 id="tiny-size-no-exponent"),
    pytest.param(None, "centos", 1.5e9, ["centos"],
                 {IMAGE: "centos", IMAGE_SIZE: "1500000000"}, id="huge-size-no-exponent"),
    pytest.param(TEMPLATE, "centos", 4096.0, ["ghcr.io/lab/solver:2"],
                 {IMAGE: "centos", IMAGE_SIZE: "4096"}, id="template-kept"),
    pytest.param(TEMPLATE, None, 0.0, ["ghcr.io/lab/solver:2"], {}, id="template-no-image"),
])
def test_a_vm_pod_carries_the_leases_image(template, image, mb, runs, notes):
    pod = _pod(template, image, mb)
    assert [c["image"] for c in pod["spec"]["containers"]] == runs
    assert {k: v for k, v in pod["metadata"]["annotations"].items()
            if k in (IMAGE, IMAGE_SIZE)} == notes
    assert pod["spec"]["securityContext"]["runAsNonRoot"] is True  # restricted as ever
    # the size as the emulated kubelet reads it: a decimal number
    if IMAGE_SIZE in notes:
        assert float(pod["metadata"]["annotations"][IMAGE_SIZE]) == pytest.approx(
            mb, abs=1e-6)


@pytest.mark.parametrize("image", [
    pytest.param("centos", id="bare"),
    pytest.param("img3", id="trace-name"),
    pytest.param("library/centos:7", id="path-tag"),
    pytest.param("registry.k8s.io/pause:3.10", id="registry"),
    pytest.param("localhost:5000/vms/centos", id="localhost-port"),
    pytest.param("Registry.Example.com/vms/centos", id="host-case-free"),
    pytest.param("[::1]:5000/vms/centos", id="ipv6-host"),
    pytest.param("centos@sha256:" + "a" * 64, id="digest"),
    pytest.param("a__b.c-d/e:V1_x", id="separators"),
])
def test_an_image_reference_a_kubelet_pulls_is_accepted(image):
    assert image_problem(image) is None


@pytest.mark.parametrize(("image", "why"), [
    pytest.param("CentOS", "is not an image reference", id="upper-case-name"),
    pytest.param("Lab/centos", "is not an image reference", id="upper-case-path-not-host"),
    pytest.param("centos:", "is not an image reference", id="empty-tag"),
    pytest.param("centos:-7", "is not an image reference", id="tag-starts-with-dash"),
    pytest.param(" centos", "is not an image reference", id="leading-space"),
    pytest.param("centos 7", "is not an image reference", id="space"),
    pytest.param("a___b", "is not an image reference", id="three-underscores"),
    pytest.param("centos@sha256:abc", "is not an image reference", id="short-digest"),
    pytest.param("a" * 64, "is an image ID, not a reference", id="image-id"),
    pytest.param("x/" + "a" * 254, "longer than 255 characters", id="too-long"),
])
def test_an_image_reference_a_kubelet_refuses_is_one_clear_problem(image, why):
    problem = image_problem(image)
    assert problem is not None and why in problem


def _lease(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": "Lease",
            "metadata": {"name": name, "namespace": "lab"},
            "spec": {"type": "BestEffortSuspendable", "vms": 2, "duration": "1h",
                     "resources": {"cpu": "1", "memory": "1Gi"}, **spec}}


def test_a_leases_bad_image_rejects_it_naming_the_field():
    with pytest.raises(LeaseInputError) as info:
        lease_spec(_lease("bad", image="CentOS", imageSizeMB=10), Origin.EXTERNAL, 0.0)
    assert info.value.problems == [
        'spec.image: "CentOS" is not an image reference; write'
        " [registry[:port]/]name[:tag][@digest], the name in lower case"
        ' (e.g. "registry.example.com/vms/centos:7")']


def test_pods_carry_the_image_and_a_bad_image_touches_no_other_lease(api_server):
    """Against the emulated API server, one step: the Lease with a bad image is
    Rejected with the problem, its neighbours' pods are made, each with its image."""
    async def scenario() -> None:
        async with KubeClient.from_kubeconfig(api_server.kubeconfig) as client:
            with contextlib.suppress(KubeError):
                await client.create("/api/v1/namespaces", {
                    "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "lab"}})
            shell = Shell(client, [ClusterPool(PoolSpec("p", 3, 4000, 16384),
                                               ("p-0", "p-1", "p-2"), frozenset())],
                          SchedulerConfig(), Clock(2000.0, time.time()))
            path = f"/apis/{API_VERSION}/namespaces/lab/leases"
            for obj in (_lease("plain", image="centos", imageSizeMB=4096),
                        _lease("bad", image="Not An Image", imageSizeMB=1),
                        _lease("own", image="centos", template=TEMPLATE)):
                shell.submit(await client.create(path, obj), Origin.EXTERNAL)
            await shell.step()
            await shell.outbox.flush()
            bad = await client.get(f"{path}/bad")
            assert bad["status"]["phase"] == "Rejected"
            assert bad["status"]["message"].startswith(
                'spec.image: "Not An Image" is not an image reference')
            pods = {p["metadata"]["name"]: p for p in
                    (await client.get("/api/v1/namespaces/lab/pods"))["items"]}
            assert sorted(pods) == ["own-vm-0", "own-vm-1", "plain-vm-0", "plain-vm-1"]
            for name, pod in pods.items():
                notes = pod["metadata"]["annotations"]
                assert notes[IMAGE] == "centos"
                assert notes[IMAGE_SIZE] == ("4096" if name.startswith("plain") else "0")
                assert [c["image"] for c in pod["spec"]["containers"]] == (
                    ["centos"] if name.startswith("plain") else ["ghcr.io/lab/solver:2"])
    asyncio.run(scenario())
