"""Shared pools: several VMs per node, the kind every user of the operator gets.

Today a shared pool is planned by :class:`.packed.PackedPool` alone (issue 20 adds
the counted plan for pools of one VM shape)."""

from __future__ import annotations

from .packed import PackedPool

SharedPool = PackedPool

__all__ = ["SharedPool"]
