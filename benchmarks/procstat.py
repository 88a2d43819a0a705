"""What a benchmark reads of another process from /proc: CPU seconds and memory."""

from __future__ import annotations

import os
from pathlib import Path


def cpu_seconds(pid: int) -> float:
    """User and system CPU seconds the process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def kernel_side(pid: int) -> tuple[float, int, int]:
    """System (kernel) CPU seconds, minor and major page faults so far: what the
    kernel spends on the process, apart from its own code."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[12]) / os.sysconf("SC_CLK_TCK"), int(fields[7]), int(fields[9])


def memory_mb(pid: int, field: str = "VmRSS") -> float:
    """A memory line of /proc/<pid>/status in MB: ``VmRSS`` (resident now) or
    ``VmHWM`` (the peak resident set)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    return float("nan")
