"""The protobuf reader's refusals (its decoding is exercised by helm in test_helm.py)."""

from __future__ import annotations

import pytest

from leasehold_emulator.apiserver.protobuf import MAGIC, ProtobufError, decode


def _field(number: int, payload: bytes) -> bytes:
    assert len(payload) < 128
    return bytes([number << 3 | 2, len(payload)]) + payload


def envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    type_meta = _field(1, api_version.encode()) + _field(2, kind.encode())
    return MAGIC + _field(1, type_meta) + _field(2, raw)


def test_a_config_map_reads_as_json():
    meta = _field(1, b"cm") + _field(3, b"ns") + _field(11, _field(1, b"k") + _field(2, b"v"))
    raw = _field(1, meta) + _field(2, _field(1, b"a") + _field(2, b"1"))
    assert decode(envelope("v1", "ConfigMap", raw)) == {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "cm", "namespace": "ns", "labels": {"k": "v"}},
        "data": {"a": "1"}}


@pytest.mark.parametrize(("body", "message"), [
    (b'{"kind": "Secret"}', "does not start with the protobuf magic"),
    (envelope("v1", "Pod", b""), "not Pod; send JSON"),
    (MAGIC + b"\x0a\x7f", "truncated field"),
])
def test_what_is_not_read_is_refused(body, message):
    with pytest.raises(ProtobufError, match=message):
        decode(body)
