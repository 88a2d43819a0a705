"""The edge of leasehold: pydantic models of user input, converted to core dataclasses.

Validation happens here, once; :mod:`leasehold.core` trusts what it is given.
"""

from .durations import parse_cpu, parse_duration, parse_memory
from .lease import LeaseSpec
from .scenario import (
    POLICIES,
    ClusterSpec,
    ConfigSpec,
    OverheadSpec,
    PoolSpecModel,
    Scenario,
    ScenarioError,
    load_scenario,
    parse_scenario,
    validate_scenario,
)

__all__ = [
    "POLICIES",
    "ClusterSpec",
    "ConfigSpec",
    "LeaseSpec",
    "OverheadSpec",
    "PoolSpecModel",
    "Scenario",
    "ScenarioError",
    "load_scenario",
    "parse_cpu",
    "parse_duration",
    "parse_memory",
    "parse_scenario",
    "validate_scenario",
]
