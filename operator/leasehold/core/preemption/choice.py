"""What a policy decides: which pool's instance, which of its candidates."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Choice:
    #: index of the chosen instance (pool); -1 with no members
    instance: int
    #: chosen candidates, ascending indices into that instance's candidates
    members: tuple[int, ...]
    #: candidate sets the policy weighed (sampled sets when not exact)
    candidate_sets: int
    exact: bool


#: nobody is preempted
NONE = Choice(-1, (), 0, True)
