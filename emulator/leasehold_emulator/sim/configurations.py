"""The six configurations of 004 §4.4 as presets an experiment names
(``configurations: [NOVM-NOSR, NOVM-SR, ...]``), in the vocabulary of issue 22: a
pool's ``images`` and ``vm``, a lease's ``image``/``image_mb``, ``suspension``.

=================  ==========  ===============  ======================================
configuration      suspension  suspend before   VMs: images
                               blocking
=================  ==========  ===============  ======================================
NOVM-NOSR          none        no               no VMs, no images
NOVM-SR            all         yes              no VMs, no images
VM-PREDEPLOY       all         yes              one image, predeployed on every node
VM-MULT            all         yes              37 images, uniform, not reused
VM-REUSE-UNIFORM   all         yes              37 images, uniform, reused
VM-REUSE-SKEWED    all         yes              37 images, 7 at 10% and 30 at 1%, reused
=================  ==========  ===============  ======================================

Every VM configuration: a 5% slowdown, 10 s boot and 10 s shutdown (004 §4.3: "the
sum ... does not exceed 20 seconds": its bound, split evenly), a repository link of
10 MB/s, 40 GB disks of which 20 GB cache images (D_p = D_w = 20 GB), images of 4 GB
(GB and MB binary: 40,960, 20,480 and 4,096 MB). "Suspend before blocking" is
Haizea's: with suspension, a waiting lease runs in the hole before a reservation and
is suspended for it; without, the plan goes around reservations (004 §4.4's reading:
backfilling instead).

Images are drawn per lease in submission order from ``random.Random(seed)`` (the
unit's replication seed), so every configuration that draws the same list sees the
same images (VM-MULT and VM-REUSE-UNIFORM: 004's "uniform list of requests").
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from leasehold.core.model import ImagesSpec, PoolSpec, Request, SchedulerConfig, VmModel

#: 004 §4.2-4.3, as written in this module's docstring
SLOWDOWN = 0.05
BOOT = SHUTDOWN = 10.0
BANDWIDTH = 10.0  # MB/s
DISK = 40 * 1024.0  # MB per node
CACHE = 20 * 1024.0  # D_p
IMAGE_MB = 4 * 1024.0
IMAGES = 37
#: the skewed list: the first SKEWED_HEAVY images at 10% each, the others at 1%
SKEWED_HEAVY, HEAVY, LIGHT = 7, 0.10, 0.01
#: the one image of VM-PREDEPLOY
SINGLE = "img-single"

Assignment = Literal["none", "single", "uniform", "skewed"]


@dataclass(frozen=True, slots=True)
class Configuration:
    """What a configuration changes in a run: the scheduler's suspension, its pools'
    VM model and image repository, and which image each lease boots from."""

    name: str
    suspension: Literal["all", "none"]
    suspend_before_blocking: bool
    vm: VmModel | None
    images: ImagesSpec | None
    assignment: Assignment


_VM = VmModel(slowdown=SLOWDOWN, boot=BOOT, shutdown=SHUTDOWN)


def _images(**changes: object) -> ImagesSpec:
    return replace(ImagesSpec(bandwidth=BANDWIDTH, disk=DISK, cache=CACHE), **changes)


#: by name, in 004's order
CONFIGURATIONS: dict[str, Configuration] = {c.name: c for c in (
    Configuration("NOVM-NOSR", "none", False, None, None, "none"),
    Configuration("NOVM-SR", "all", True, None, None, "none"),
    Configuration("VM-PREDEPLOY", "all", True, _VM, _images(predeployed_all=True), "single"),
    Configuration("VM-MULT", "all", True, _VM, _images(reuse=False), "uniform"),
    Configuration("VM-REUSE-UNIFORM", "all", True, _VM, _images(), "uniform"),
    Configuration("VM-REUSE-SKEWED", "all", True, _VM, _images(), "skewed"),
)}


def image_names() -> list[str]:
    """The 37 images, ``img-00`` .. ``img-36`` (the skewed list's heavy ones first)."""
    return [f"img-{i:02d}" for i in range(IMAGES)]


def weights(assignment: Assignment) -> list[float]:
    """Each image's probability under ``uniform`` or ``skewed``."""
    if assignment == "skewed":
        return [HEAVY] * SKEWED_HEAVY + [LIGHT] * (IMAGES - SKEWED_HEAVY)
    return [1 / IMAGES] * IMAGES


def with_images(reqs: Sequence[Request], assignment: Assignment, seed: int) -> list[Request]:
    """``reqs`` with the images ``assignment`` gives them: none (and no image size: no
    VM, nothing to copy), the single one, or one drawn per lease in the order given
    (:func:`weights`) with ``random.Random(seed)``; each image is 4 GB."""
    if assignment == "none":
        return [replace(r, image=None, image_mb=0.0) for r in reqs]
    if assignment == "single":
        return [replace(r, image=SINGLE, image_mb=IMAGE_MB) for r in reqs]
    rng = random.Random(seed)
    drawn = rng.choices(image_names(), weights(assignment), k=len(reqs))
    return [replace(r, image=img, image_mb=IMAGE_MB) for r, img in zip(reqs, drawn, strict=True)]


def apply(conf: Configuration, config: SchedulerConfig, pools: Sequence[PoolSpec],
          reqs: Sequence[Request], seed: int
          ) -> tuple[SchedulerConfig, list[PoolSpec], list[Request]]:
    """A run's configuration, pools and requests under ``conf`` (every pool gets its
    VM model and image repository)."""
    return (replace(config, suspension=conf.suspension,
                    suspend_before_blocking=conf.suspend_before_blocking),
            [replace(p, vm=conf.vm, images=conf.images) for p in pools],
            with_images(reqs, conf.assignment, seed))
