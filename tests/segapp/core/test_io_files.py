"""Files the app and the CLI write: the user's normal file mode, written whole or not at all."""

import os
import stat
from pathlib import Path

import numpy as np
import pytest

from segapp.core import io
from segapp.core.io import save_image, save_labels, save_overlay, write_atomic
from segapp.core.session import save_session
from segapp.model.document import Document


def _mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture
def umask_027():
    old = os.umask(0o027)
    yield 0o640
    os.umask(old)


def test_every_written_file_gets_the_normal_mode(tmp_path, umask_027):
    labels = np.array([[1, 2], [2, 1]])
    rgb = np.zeros((2, 2, 3), np.uint8)
    doc = Document()
    doc.set_image(rgb)
    save_labels(tmp_path / "l.png", labels)
    save_overlay(tmp_path / "o.png", rgb, labels)
    save_image(tmp_path / "i.png", rgb)
    save_session(tmp_path / "s.json", doc)
    (tmp_path / "plain").write_text("x")  # what any new file gets here
    for name in ("l.png", "o.png", "i.png", "s.json"):
        assert _mode(tmp_path / name) == _mode(tmp_path / "plain") == umask_027, name
    assert sorted(p.name for p in tmp_path.iterdir()) == ["i.png", "l.png", "o.png", "plain",
                                                          "s.json"]


def test_a_replaced_file_keeps_its_mode(tmp_path):
    target = tmp_path / "labels.png"
    target.write_bytes(b"old")
    os.chmod(target, 0o604)
    save_labels(target, np.ones((3, 3), int))
    assert _mode(target) == 0o604
    assert target.read_bytes()[:4] == b"\x89PNG"


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    target = tmp_path / "s.json"
    target.write_text("old")

    def broken(fd):
        raise OSError("disk full")

    monkeypatch.setattr(io.os, "fsync", broken)
    with pytest.raises(OSError, match="disk full"):
        write_atomic(target, b"new contents")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["s.json"]


def test_the_temporary_name_is_unique_and_hidden(tmp_path, monkeypatch):
    """Two writers of one path never share a temporary file, and a leftover one (a killed
    process) does not stand in the way."""
    seen = []
    real_replace = os.replace

    def spy(src, dst):
        seen.append(Path(src).name)
        return real_replace(src, dst)

    (tmp_path / "x.png.tmp").write_text("leftover of an older version")
    monkeypatch.setattr(io.os, "replace", spy)
    write_atomic(tmp_path / "x.png", b"a")
    write_atomic(tmp_path / "x.png", b"b")
    assert len(set(seen)) == 2 and all(n.startswith(".x.png.") for n in seen)
    assert (tmp_path / "x.png").read_bytes() == b"b"
