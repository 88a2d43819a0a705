"""A real Kopf operator against the emulated server (kopf.testing.KopfRunner)."""

from __future__ import annotations

import os
from pathlib import Path

from kopf.testing import KopfRunner

from emulated import CRD, until, widget

OPERATOR = Path(__file__).with_name("kopf_operator.py")




def test_kopf_handlers_status_finalizers_and_events(emulated, monkeypatch):
    monkeypatch.setenv("KUBECONFIG", str(emulated.kubeconfig))
    emulated.apply(CRD)
    emulated.kubectl("wait", "--for=condition=Established", "crd/widgets.example.io")
    args = ["run", "--standalone", "--namespace", "default", "--verbose", str(OPERATOR)]
    with KopfRunner(args, timeout=60) as runner:
        emulated.apply(widget("kw", 2))

        def handled():
            """the create handler's result in the status, a finalizer, ticks"""
            obj = emulated.get("wd", "kw")
            status = obj.get("status", {})
            return (status.get("created", {}).get("seen") == 2
                    and "example.io/kopf-finalizer" in obj["metadata"].get("finalizers", [])
                    and status.get("ticks", 0) >= 2) and obj
        until(handled, 20)
        events = emulated.get("events", "--field-selector", "involvedObject.name=kw")["items"]
        assert any(e["reason"] == "Created" and e["message"] == "size 2" for e in events)

        emulated.apply(widget("kw", 4))
        until(lambda: emulated.get("wd", "kw").get("status", {}).get("phase")
                 == "resized to 4")

        emulated.kubectl("delete", "wd", "kw", "--wait=false")
        until(lambda: emulated.kubectl("get", "wd", "kw", check=False).returncode != 0)
    assert runner.exit_code == 0, runner.output
    assert runner.exception is None
    assert "created kw" in runner.output and "deleted kw" in runner.output
    assert os.environ["KUBECONFIG"] == str(emulated.kubeconfig)
