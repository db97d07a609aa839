"""The package as users install it: a wheel built from the project holds the bundled samples,
and the demo runs from that wheel installed outside the repository."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ASSETS = sorted(p.name for p in (ROOT / "segapp" / "assets").glob("*.png"))


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out),
                           str(ROOT)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (path,) = out.glob("segapp-*.whl")
    return path


@pytest.mark.slow
def test_the_wheel_holds_every_sample_image_and_its_strokes(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    assert ASSETS and {"cameraman.png", "cameraman_strokes_k2.png", "coffee.png"} <= set(ASSETS)
    assert {f"segapp/assets/{a}" for a in ASSETS} <= names
    assert not any(n.startswith("assets/") for n in names)  # inside the package, not beside it
    assert {"solver/mrf/polish/pipeline.py", "segapp/cli/segment.py"} <= names


def _reuse_compiled_kernels(installed: Path) -> None:
    """Copy the kernels numba has cached for the repository's sources next to the installed
    copies (same bytes, same modification times), so the run below loads them instead of
    compiling for a minute again; a kernel not cached yet simply compiles."""
    for py in (installed / "solver").rglob("*.py"):
        orig = ROOT / py.relative_to(installed)
        if not orig.exists() or orig.read_bytes() != py.read_bytes():
            continue
        st = orig.stat()
        os.utime(py, ns=(st.st_atime_ns, st.st_mtime_ns))
        for f in (orig.parent / "__pycache__").glob(f"{orig.stem}.*.nb[ic]"):
            (py.parent / "__pycache__").mkdir(exist_ok=True)
            shutil.copy2(f, py.parent / "__pycache__" / f.name)


def _png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", head[16:24])


@pytest.mark.slow
def test_the_demo_runs_from_the_wheel_installed_outside_the_repository(wheel, tmp_path):
    site = tmp_path / "site"
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                           "--target", str(site), str(wheel)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    _reuse_compiled_kernels(site)
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = dict(os.environ, PYTHONPATH=str(site), QT_QPA_PLATFORM="offscreen")
    where = subprocess.run([sys.executable, "-c", "import segapp, solver; "
                            "print(segapp.__file__); print(solver.__file__)"],
                           capture_output=True, text=True, cwd=work, env=env)
    assert [Path(p).parent.parent for p in where.stdout.split()] == [site, site], where.stdout
    shot = work / "shot.png"
    run = subprocess.run([sys.executable, "-m", "segapp", "--demo-screenshot", str(shot)],
                         capture_output=True, text=True, cwd=work, env=env, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    width, height = _png_size(shot)
    assert width >= 1280 and height >= 800


def test_make_run_installs_only_what_the_app_needs():
    """`make run` installs the package without the test tools; `make test` adds them."""
    def recipe(target):
        out = subprocess.run(["make", "-n", "-B", target], cwd=ROOT, capture_output=True,
                             text=True, check=True).stdout
        return [ln for ln in out.splitlines() if "pip install" in ln and "--upgrade pip" not in ln]

    run = recipe("run")
    assert len(run) == 1 and run[0].rstrip().endswith("-e .") and "--quiet" in run[0]
    assert any('-e ".[test]"' in ln for ln in recipe("test"))
