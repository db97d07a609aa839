"""A segmentation the machine has no memory for is refused in one sentence before anything is
built, instead of ending the process (PyMaxflow's exit(1)) or a MemoryError traceback."""

import subprocess
import sys

import numpy as np
import pytest

import solver.mrf.solve.segment as segment_module

from segapp.cli import main
from segapp.core import memory
from segapp.core.memory import InsufficientMemoryError, check_memory, estimate_bytes
from segapp.core.pipeline import SegmentParams, run_segmentation

pytestmark = pytest.mark.usefixtures("app_launches")


def test_the_estimate_grows_with_pixels_labels_and_the_reference():
    a = estimate_bytes(10**6, 2, False)
    assert estimate_bytes(2 * 10**6, 2, False) - a == pytest.approx(a - estimate_bytes(0, 2, False))
    assert estimate_bytes(10**6, 4, False) > a
    assert estimate_bytes(10**6, 2, True) > a
    # measured (docs/performance.md, Memory, 2026-11-27): 495, 631 and 1067 MB at 1, 2 and 4 MP
    # for K = 2, 1182, 1973 and 3275 MB for K = 4; with the reference at 2 MP 1217 and 2299 MB.
    # The estimate is not below any of them, nor more than 2.5 times any of them (a photo that
    # fits is not refused).
    rows = ((1, 2, False, 495e6), (2, 2, False, 631e6), (4, 2, False, 1067e6),
            (1, 4, False, 1182e6), (2, 4, False, 1973e6), (4, 4, False, 3275e6),
            (2, 2, True, 1217e6), (2, 4, True, 2299e6))
    for mp, k, reference, rss in rows:
        assert rss <= estimate_bytes(mp * 10**6, k, reference) <= 2.5 * rss


def test_the_refusal_says_what_fits():
    need = estimate_bytes(48 * 10**6, 2, True)
    alone = estimate_bytes(48 * 10**6, 2, False)
    with pytest.raises(InsufficientMemoryError, match=r"48\.0-megapixel.*K = 2.*leave out the "
                       r"reference.*available") as info:
        check_memory(48 * 10**6, 2, True, available=(need + alone) / 2)
    assert "\n" not in str(info.value)
    with pytest.raises(InsufficientMemoryError) as info:
        check_memory(48 * 10**6, 2, True, available=alone / 2)
    assert "leave out" not in str(info.value)
    check_memory(48 * 10**6, 2, True, available=need)  # just enough: no error


def test_the_pipeline_checks_before_building(monkeypatch):
    built = []
    monkeypatch.setattr(segment_module, "build_problem", lambda *a, **kw: built.append(1))
    monkeypatch.setattr(memory, "available_bytes", lambda: 1e8)
    monkeypatch.setattr(memory, "_resident_bytes", lambda: 0.0)
    img = np.zeros((300, 400, 3), np.uint8)
    with pytest.raises(InsufficientMemoryError, match="0.1-megapixel"):
        run_segmentation(img, None, SegmentParams(k=2), rect=(10, 10, 100, 100))
    assert built == []


def test_the_cli_refuses_in_one_line_and_writes_nothing(monkeypatch, tmp_path, capsys):
    import cv2
    img = tmp_path / "big.png"
    cv2.imwrite(str(img), np.zeros((200, 300, 3), np.uint8))
    monkeypatch.setattr(memory, "available_bytes", lambda: 5e8)
    monkeypatch.setattr(memory, "_resident_bytes", lambda: 0.0)
    rc = main(["segment", str(img), "--rect", "10,10,100,100", "--out",
               str(tmp_path / "l.png"), "--report", str(tmp_path / "r.json")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "60000-pixel image" in err[0] and "available" in err[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.png"]


def test_an_address_space_limit_is_counted():
    """Under `ulimit -v` (the case that used to end the process) the room left is what the
    limit allows beyond the memory already mapped."""
    code = ("import resource; from segapp.core import memory; "
            "resource.setrlimit(resource.RLIMIT_AS, (6 * 2**30, resource.RLIM_INFINITY)); "
            "left = memory._address_space_left(); "
            "print(0 < left < 6 * 2**30, memory.available_bytes() <= left)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["True", "True"]


def test_a_reference_in_its_own_process_is_counted_with_its_copy_of_the_problem():
    n = 10**7
    # beside the solve (the app's way) its peak adds to the solve's; before it, less
    assert estimate_bytes(n, 2, True, isolated=True) > \
        estimate_bytes(n, 2, True, isolated=True, beside=False) > \
        estimate_bytes(n, 2, True) > estimate_bytes(n, 2, False)
    # no reference, nothing to isolate
    assert estimate_bytes(n, 2, False, isolated=True) == estimate_bytes(n, 2, False)


def test_a_reference_that_fits_only_before_the_solve_is_solved_first():
    n = 4 * 10**6
    beside = estimate_bytes(n, 2, True, isolated=True)
    first = estimate_bytes(n, 2, True, isolated=True, beside=False)
    assert check_memory(n, 2, True, available=beside, isolated=True) is True
    assert check_memory(n, 2, True, available=(beside + first) / 2, isolated=True) is False
    assert check_memory(n, 2, True, available=beside) is True  # (in-process: always first)
    with pytest.raises(InsufficientMemoryError, match=f"needs about {first / 1e9:.1f} GB"):
        check_memory(n, 2, True, available=first - 1, isolated=True)


@pytest.mark.slow
def test_the_app_offers_to_run_without_the_reference(win, qtbot, monkeypatch):
    """A refusal that the image would fit without the reference: the app asks, and on yes runs
    again with the reference off, keeping the strokes."""
    from PyQt6.QtWidgets import QMessageBox

    from tests.segapp.ui.test_ui import load
    load(win, qtbot)
    strokes = win.doc.strokes.copy()
    # (the least a run with the reference needs: its child solving before the solve)
    need = estimate_bytes(win.doc.image.shape[0] * win.doc.image.shape[1], 2, True,
                          isolated=True, beside=False)
    alone = estimate_bytes(win.doc.image.shape[0] * win.doc.image.shape[1], 2, False)
    monkeypatch.setattr(memory, "available_bytes", lambda: (need + alone) / 2)
    monkeypatch.setattr(memory, "_resident_bytes", lambda: 0.0)
    asked = []
    monkeypatch.setattr(QMessageBox, "question",
                        lambda *a, **k: asked.append(a[2]) or QMessageBox.StandardButton.Yes)
    assert win.params_panel.reference.isChecked()
    win.start_run()
    qtbot.waitUntil(lambda: win.outcome is not None and not win.running, timeout=60000)
    assert len(asked) == 1 and "leave out the reference" in asked[0]
    assert not win.params_panel.reference.isChecked()
    assert win.outcome.reference_energy is None and win.errors == []
    assert (win.doc.strokes == strokes).all()


def test_a_refusal_that_nothing_helps_is_an_error_dialog(win, qtbot, monkeypatch):
    from PyQt6.QtWidgets import QMessageBox

    from tests.segapp.ui.test_ui import load
    load(win, qtbot)
    monkeypatch.setattr(memory, "available_bytes", lambda: 1e6)
    monkeypatch.setattr(memory, "_resident_bytes", lambda: 0.0)
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: pytest.fail("no offer"))
    win.start_run()
    qtbot.waitUntil(lambda: not win.running and bool(win.errors), timeout=60000)
    assert "1600-pixel image with K = 2" in win.errors[0][1] and win.outcome is None


def _cgroup_tree(tmp_path, lines, files):
    """A fake ``/proc/self/cgroup`` and cgroup mount: ``files`` maps paths under the mount to
    their contents."""
    proc = tmp_path / "cgroup"
    proc.write_text("".join(line + "\n" for line in lines))
    root = tmp_path / "sys"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return proc, root


def test_a_cgroup_v2_limit_is_read_at_every_level(tmp_path):
    """systemd's MemoryMax sits on the unit; the process is in a child cgroup of it without a
    limit of its own. The room is the tightest limit less its usage, reclaimable cache not
    counted as used."""
    gib = 2**30
    proc, root = _cgroup_tree(tmp_path, ["0::/app.slice/run.service/worker"], {
        "app.slice/memory.max": "max\n",
        "app.slice/memory.current": f"{5 * gib}\n",
        "app.slice/run.service/memory.max": f"{3 * gib}\n",
        "app.slice/run.service/memory.current": f"{gib}\n",
        "app.slice/run.service/memory.stat": f"anon 100\ninactive_file {gib // 2}\n",
        "app.slice/run.service/worker/memory.max": "max\n",
        "app.slice/run.service/worker/memory.current": f"{gib}\n",
    })
    assert memory.cgroup_room(proc, root) == pytest.approx(3 * gib - gib // 2)


def test_a_cgroup_v1_limit_is_read_and_its_unlimited_value_ignored(tmp_path):
    gib = 2**30
    files = {"memory/docker/abc/memory.limit_in_bytes": f"{3 * gib}\n",
             "memory/docker/abc/memory.usage_in_bytes": f"{2 * gib}\n",
             "memory/docker/memory.limit_in_bytes": "9223372036854771712\n",
             "memory/docker/memory.usage_in_bytes": f"{2 * gib}\n"}
    proc, root = _cgroup_tree(tmp_path, ["4:memory:/docker/abc", "3:cpu:/docker/abc"], files)
    assert memory.cgroup_room(proc, root) == pytest.approx(gib)
    files["memory/docker/abc/memory.limit_in_bytes"] = "9223372036854771712\n"
    proc, root = _cgroup_tree(tmp_path, ["4:memory:/docker/abc"], files)
    assert memory.cgroup_room(proc, root) is None


def test_a_container_sees_its_own_cgroup_at_the_root(tmp_path):
    """Inside Docker, /proc/self/cgroup names the host's path, which the container's mount
    does not have: the limit at the mount's root is the container's."""
    gib = 2**30
    proc, root = _cgroup_tree(tmp_path, ["0::/system.slice/docker-1234.scope"], {
        "memory.max": f"{3 * gib}\n", "memory.current": f"{gib}\n"})
    assert memory.cgroup_room(proc, root) == pytest.approx(2 * gib)


def test_under_a_3_gib_cgroup_a_24_megapixel_photo_is_refused_in_one_sentence(
        tmp_path, monkeypatch):
    """The case that ended `segapp segment` with status 137 and no word: 6000×4000 with a
    rectangle under MemoryMax=3G, on a machine whose own free memory is ample."""
    gib = 2**30
    proc, root = _cgroup_tree(tmp_path, ["0::/user.slice/segapp.scope"], {
        "user.slice/segapp.scope/memory.max": f"{3 * gib}\n",
        "user.slice/segapp.scope/memory.current": f"{300 * 2**20}\n"})
    monkeypatch.setattr(memory, "PROC_CGROUP", proc)
    monkeypatch.setattr(memory, "CGROUP_ROOT", root)
    monkeypatch.setattr(memory, "_meminfo_available", lambda: 64e9)
    monkeypatch.setattr(memory, "_address_space_left", lambda: None)
    monkeypatch.setattr(memory, "_resident_bytes", lambda: 0.0)
    assert memory.available_bytes() == pytest.approx(3 * gib - 300 * 2**20)
    with pytest.raises(InsufficientMemoryError, match=r"24\.0-megapixel.*but 2\.9 GB is "
                       "available"):
        check_memory(6000 * 4000, 2, False)
    check_memory(2000 * 1000, 2, False)  # a 2-megapixel photo fits
