"""A segmentation's files rendered in memory, as segment and batch write them."""

import json

import cv2
import numpy as np
import pytest

from segapp.core.io import load_label_image
from segapp.core.outputs import OutputPaths, encode_image, render_outputs


@pytest.mark.parametrize("fails", ["raises", "returns False"])
def test_an_image_opencv_cannot_encode_is_one_sentence(tmp_path, monkeypatch, fails):
    def imencode(ext, image):
        if fails == "raises":
            raise cv2.error("too large")
        return False, None

    monkeypatch.setattr(cv2, "imencode", imencode)
    path = tmp_path / "o.jpg"
    with pytest.raises(ValueError) as err:
        encode_image(path, np.zeros((4, 4, 3), np.uint8))
    assert str(err.value) == f"cannot write '{path}': OpenCV could not encode the image"


def test_every_file_asked_for_is_rendered_and_reads_back(tmp_path):
    """The labels (plain and as a palette), the overlay, the cut-out of the kept labels and the
    report: each file's bytes decode to what was asked for."""
    image = np.full((6, 8, 3), 200, np.uint8)
    labels = np.ones((6, 8), np.int32)
    labels[:, 4:] = 2
    paths = OutputPaths(tmp_path / "l.png", tmp_path / "o.jpg", tmp_path / "c.png",
                        tmp_path / "r.json", cutout_labels=(2,))
    files = dict(render_outputs(image, labels, 2, paths, {"energy": -1.5}))
    assert list(files) == paths.files()
    for path, data in files.items():
        path.write_bytes(data)
    assert np.array_equal(load_label_image(paths.labels), labels)
    assert cv2.imread(str(paths.overlay)).shape == (6, 8, 3)
    alpha = cv2.imread(str(paths.cutout), cv2.IMREAD_UNCHANGED)[:, :, 3]
    assert np.array_equal(alpha > 0, labels == 2)
    assert json.loads(paths.report.read_text()) == {"energy": -1.5}
    palette = dict(render_outputs(image, labels, 2, OutputPaths(tmp_path / "p.png",
                                                                 labels_palette=True)))
    (tmp_path / "p.png").write_bytes(palette[tmp_path / "p.png"])
    assert np.array_equal(load_label_image(tmp_path / "p.png"), labels)


def test_labels_beyond_eight_bits_are_refused_before_anything_is_encoded(tmp_path):
    with pytest.raises(ValueError, match="labels must lie in 0..255"):
        render_outputs(np.zeros((2, 2), np.uint8), np.full((2, 2), 300), 2,
                       OutputPaths(tmp_path / "l.png"))
