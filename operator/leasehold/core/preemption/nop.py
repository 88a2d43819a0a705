"""``nop``: never preempt — the "no policy" baseline of 000 §8.3."""

from __future__ import annotations

from collections.abc import Sequence

from ..model import SchedulerConfig
from .instance import Instance
from .registry import NONE, Choice, register


@register("nop")
def nop(instances: Sequence[Instance], config: SchedulerConfig) -> Choice:
    return NONE
