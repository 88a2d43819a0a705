"""Pool specs of one node size and of mixed sizes."""

from __future__ import annotations

import pytest

from leasehold.core.model import NodeGroup, PoolSpec, Shape


@pytest.mark.parametrize(
    ("spec", "sizes", "largest"),
    [
        pytest.param(PoolSpec("p", 2, 4000, 8192), [Shape(4000, 8192)] * 2,
                     Shape(4000, 8192), id="one-size"),
        pytest.param(PoolSpec("p", 3, 8000, 32768,
                              groups=(NodeGroup(2, 8000, 32768), NodeGroup(1, 32000, 4096))),
                     [Shape(8000, 32768)] * 2 + [Shape(32000, 4096)],
                     Shape(32000, 32768), id="mixed: the largest takes each resource's most"),
        pytest.param(PoolSpec("p", 3, 1000, 1024, groups=(NodeGroup(1, 8000, 2048),)),
                     [Shape(8000, 2048), Shape(1000, 1024), Shape(1000, 1024)],
                     Shape(8000, 2048), id="grown past its groups"),
    ],
)
def test_sizes_by_index(spec: PoolSpec, sizes: list[Shape], largest: Shape) -> None:
    assert spec.sizes() == sizes
    assert spec.largest() == largest


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        pytest.param({"exclusive": True, "groups": (NodeGroup(1, 1000, 1024),)},
                     "exclusive pool has nodes of one size", id="exclusive-mixed"),
        pytest.param({"groups": (NodeGroup(5, 1000, 1024),)}, "more than 2 nodes",
                     id="groups-too-many"),
    ],
)
def test_refused(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        PoolSpec("p", 2, 1000, 1024, **kwargs)  # type: ignore[arg-type]
