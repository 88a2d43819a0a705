"""The operator's ``--config`` and seed 002's utility mode: the mode runs in the
simulator only, so an operator given a ``utility`` block says so in one line rather
than scheduling as if it were not there."""

from __future__ import annotations

import pytest


def _operator_args(*argv: str):
    from leasehold.cli import build_parser
    return build_parser().parse_args(["operator", *argv])


def test_the_operator_refuses_a_utility_block(tmp_path):
    from leasehold.cli import operator_config
    path = tmp_path / "config.yaml"
    path.write_text("policy: moml\nutility: {scheme: rrr-k, private: dedicated}\n")
    with pytest.raises(ValueError) as info:
        operator_config(_operator_args("--config", str(path)))
    assert str(info.value) == (
        f"{path}: utility: the utility mode (seed 002) runs in the simulator only"
        " (leasehold simulate); drop it from the operator's configuration")


def test_the_operator_takes_a_seed(tmp_path):
    from leasehold.cli import operator_config
    path = tmp_path / "config.yaml"
    path.write_text("policy: mov\nseed: 3\n")
    assert operator_config(_operator_args("--config", str(path))).policy == "mov"
