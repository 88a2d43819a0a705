"""Run a Python module with an instrument read out at each SIGUSR1: for the
benchmarks, kept out of the operator's own code.

    python benchmarks/minute_profile.py [--counts] OUT_PREFIX -m leasehold.cli operator ...

At each SIGUSR1 what was counted since the last one is written to
``OUT_PREFIX-<n>.*`` (n = 0 for what came before the first signal, then 1, 2, ...)
and counting starts again, with the collector's statistics so far
(``.gc.json``).

- By default, cProfile on the main thread (the event loop, where the operator
  spends most of its CPU): ``.prof``. Its counts of calls are what to compare
  between intervals; its times are wall-clock (cProfile's default timer, the
  cheapest: a CPU-time timer is a system call per function call, which slowed the
  operator more than threefold), and the profile itself slows the operator ~1.5x,
  which changes how it batches its work (fewer, larger steps).
- ``--counts``: no profile, a few counters that cost next to nothing, in
  ``.counts.json``: the operator's steps, what each step goes over (the leases the
  core holds, the Leases the shell tracks, the inputs it takes), its API requests
  by verb, its journal's snapshots, and the CPU seconds of its main thread and of
  the whole process.
"""

from __future__ import annotations

import cProfile
import functools
import gc
import json
import runpy
import signal
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any


def resource(path: str) -> str:
    """The resource (and subresource) a request's path names."""
    parts = path.split("?")[0].strip("/").split("/")
    at = parts.index("namespaces") + 2 if "namespaces" in parts[:-2] else len(parts) - 2
    kind = parts[min(at, len(parts) - 1)]
    return f"{kind}/status" if parts[-1] == "status" and kind != "status" else kind


def counters() -> tuple[Counter[str], Callable[[], None]]:
    """The counters, and a function that starts counting (patches the shell and the
    client, before the operator's modules are run)."""
    counts: Counter[str] = Counter()

    def install() -> None:
        from leasehold.kube.client import KubeClient
        from leasehold.kube.shell import Shell
        step, checkpoint, request = Shell.step, Shell.checkpoint, KubeClient.request

        @functools.wraps(step)
        async def counted_step(self: Shell) -> None:
            counts["steps"] += 1
            counts["inputs"] += len(self._inputs)
            counts["core leases, summed over steps"] += len(self.core.lifecycle.leases)
            counts["tracked, summed over steps"] += len(self.tracked)
            counts["shown, summed over steps"] += len(self._shown)
            if counts["steps"] % 20 == 0:  # what the core holds, in a sample of steps
                now = self.core.now
                for st in self.core.lifecycle.leases.values():
                    if not st.phase.terminal:
                        what = f"live {st.phase.name}"
                    elif st.booking is not None or st.departure is not None:
                        what = "ended, booked"
                    else:
                        age = now - (st.end if st.end is not None else now)
                        what = f"ended {min(int(age // 600) * 10, 120)}+ min ago"
                    counts[f"core, sampled every 20th step: {what}"] += 1
            started = time.monotonic()
            await step(self)
            # wall seconds from the step's start to its end: its API calls awaited
            counts["step wall s"] += time.monotonic() - started

        @functools.wraps(checkpoint)
        async def counted_checkpoint(self: Shell) -> None:
            counts["checkpoints"] += 1
            await checkpoint(self)

        @functools.wraps(request)
        async def counted_request(self: KubeClient, method: str, path: str,
                                  *args: Any, **kwargs: Any) -> Any:
            counts[f"{method} {resource(path)}"] += 1
            return await request(self, method, path, *args, **kwargs)

        Shell.step = counted_step  # type: ignore[method-assign]
        Shell.checkpoint = counted_checkpoint  # type: ignore[method-assign]
        KubeClient.request = counted_request  # type: ignore[method-assign]
    return counts, install


def main() -> None:
    args = sys.argv[1:]
    counting = args[:1] == ["--counts"]
    if counting:
        args = args[1:]
    if len(args) < 3 or args[1] != "-m":
        raise SystemExit("usage: minute_profile.py [--counts] OUT_PREFIX -m MODULE [ARGS...]")
    prefix, _, module, *rest = args
    counts, install = counters()
    state: dict[str, Any] = {"n": -1, "profile": None if counting else cProfile.Profile(),
                             "cpu": (0.0, 0.0)}

    def dump(signum: int, frame: FrameType | None) -> None:
        profile = state["profile"]
        if profile is not None:
            profile.disable()
        state["n"] = n = state["n"] + 1
        if profile is not None:
            profile.dump_stats(f"{prefix}-{n}.prof")
            state["profile"] = fresh = cProfile.Profile()
            fresh.enable()
        main_cpu, cpu = time.thread_time(), time.process_time()
        counts["main thread CPU s"] = main_cpu - state["cpu"][0]
        counts["process CPU s"] = cpu - state["cpu"][1]
        state["cpu"] = (main_cpu, cpu)
        Path(f"{prefix}-{n}.counts.json").write_text(json.dumps(counts, indent=0))
        counts.clear()
        # the collector's work so far (collections, objects collected, per generation)
        Path(f"{prefix}-{n}.gc.json").write_text(json.dumps(gc.get_stats()))

    signal.signal(signal.SIGUSR1, dump)
    sys.argv = [module, *rest]
    if counting:
        install()
    if state["profile"] is not None:
        state["profile"].enable()
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
