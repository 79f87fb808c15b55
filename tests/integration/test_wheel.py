"""The wheel: it installs the one package ``minikafka`` and nothing else at the top of
site-packages, so it sits beside proto-plus (import name ``proto``), and its command and C
codec work from it.

Builds the wheel from this checkout and installs it, with proto-plus, into a venv of its own
(the dependencies come from pip's cache or the package index, as any install's do).
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]


def _run(*argv: str | Path, cwd: Path | None = None) -> str:
    done = subprocess.run(
        [str(a) for a in argv], cwd=cwd, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, f"{argv} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    _run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
         "-w", out, REPO)  # fmt: skip
    (built,) = out.glob("minikafka-*.whl")
    return built


def test_the_wheel_holds_only_the_minikafka_package(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names}
    assert tops == {"minikafka", wheel.name.split("-")[0] + "-" + wheel.name.split("-")[1]
                    + ".dist-info"}  # fmt: skip
    for package in ("proto", "broker", "controller", "zk", "client", "spark"):
        assert f"minikafka/{package}/__init__.py" in names
    assert any(n.startswith("minikafka/proto/_crecords.") and n.endswith(".so") for n in names)


def test_installs_beside_proto_plus_and_runs(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    _run(sys.executable, "-m", "venv", venv)
    python = venv / "bin" / "python"
    _run(python, "-m", "pip", "install", "-q", "--disable-pip-version-check", wheel, "proto-plus")

    # Both packages import, each its own: `proto` is proto-plus, ours is minikafka.proto.
    checked = _run(
        python,
        "-c",
        "import proto, minikafka, minikafka.proto.records as records\n"
        "import minikafka.broker.server.main, minikafka.client.producer.producer\n"
        "assert hasattr(proto, 'Message'), proto.__file__\n"
        "print(records.ACCELERATED)\n",
        cwd=tmp_path,
    )
    assert checked.strip() == "True"  # the C record loops came with the wheel

    # The console script, and a tool that decodes records through the C codec.
    assert "dump-log" in _run(venv / "bin" / "minikafka", "--help", cwd=tmp_path)
    segment = _write_segment(python, tmp_path)
    dumped = _run(venv / "bin" / "minikafka", "dump-log", "--files", segment,
                  "--print-data-log", cwd=tmp_path)  # fmt: skip
    assert "payload: hello" in dumped


def _write_segment(python: Path, tmp_path: Path) -> Path:
    """A one-record segment written through the installed package's own storage code."""
    log_dir = tmp_path / "orders-0"
    _run(
        python,
        "-c",
        "import sys\n"
        "from pathlib import Path\n"
        "from minikafka.broker.storage import Log, LogConfig\n"
        "from minikafka.proto.records import encode_batch\n"
        "log = Log(Path(sys.argv[1]), LogConfig())\n"
        "log.append_as_leader(encode_batch([(1000, None, b'hello', ())]), leader_epoch=0)\n"
        "log.close()\n",
        log_dir,
        cwd=tmp_path,
    )
    return log_dir / "00000000000000000000.log"
