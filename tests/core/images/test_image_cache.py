"""One node's image cache: LRU eviction, reference counts (004 §3.2)."""

from __future__ import annotations

import pytest

from leasehold.core.images import NodeCache


def filled(capacity: float, *images: tuple[str, float, float]) -> NodeCache:
    """A cache holding ``(image, size, delivered at)`` in that order."""
    cache = NodeCache(capacity)
    for image, size, at in images:
        assert cache.add(image, size, at) == []
    return cache


@pytest.mark.parametrize(("cache", "add", "evicted", "kept"), [
    pytest.param(filled(200, ("x", 100, 0), ("y", 100, 1)), ("z", 100, 2),
                 ["x"], {"y", "z"}, id="least-recently-used-goes"),
    pytest.param(filled(200, ("x", 100, 0), ("y", 100, 1)), ("z", 200, 2),
                 ["x", "y"], {"z"}, id="as-many-as-it-takes"),
    pytest.param(filled(200, ("x", 100, 5), ("y", 100, 1)), ("z", 100, 6),
                 ["y"], {"x", "z"}, id="recency-not-arrival"),
    pytest.param(filled(200, ("x", 50, 0), ("y", 50, 0)), ("z", 100, 1),
                 [], {"x", "y", "z"}, id="room-left-no-eviction"),
    pytest.param(filled(200, ("x", 100, 0)), ("z", 300, 1),
                 [], {"x"}, id="larger-than-the-cache-never-cached"),
])
def test_lru_eviction_under_a_full_disk(cache: NodeCache, add: tuple[str, float, float],
                                        evicted: list[str], kept: set[str]) -> None:
    assert cache.add(*add) == evicted
    assert set(cache.entries) == kept
    assert cache.used <= cache.capacity


def test_an_image_in_use_is_never_evicted() -> None:
    cache = filled(200, ("x", 100, 0), ("y", 100, 1))
    cache.acquire("x", 2)  # a VM runs from x, y was used later
    cache.acquire("y", 3)
    cache.release("y", 4)  # its VM left: y is free to go although newer than x
    assert cache.add("z", 100, 5) == ["y"]
    assert set(cache.entries) == {"x", "z"}


def test_all_in_use_the_new_image_is_not_cached() -> None:
    cache = filled(200, ("x", 100, 0), ("y", 100, 1))
    cache.acquire("x", 2)
    cache.acquire("y", 2)
    assert cache.add("z", 100, 3) == []
    assert set(cache.entries) == {"x", "y"}


def test_pinned_images_stay() -> None:
    """An image a planned lease relies on is kept, as one in use."""
    cache = filled(200, ("x", 100, 0), ("y", 100, 1))
    assert cache.add("z", 100, 2, pinned={"x"}) == ["y"]
