"""Regenerate the bundled sample images and their example stroke label images.

Run from anywhere: ``python segapp/assets/make_strokes.py``.  Stroke images are single-channel uint8
PNGs, 0 = no stroke, k = label k.  Coordinates below are (x, y) pixel positions.
"""

from __future__ import annotations

import logging
from pathlib import Path

import cv2
import numpy as np
import skimage.data

HERE = Path(__file__).resolve().parent
WIDTH = 5

# cameraman (512 x 512): the man with his camera and tripod, the sky, the grass, the skyline
MAN = [[(20, 285), (110, 285), (180, 255)], [(60, 330), (75, 420), (90, 500)],
       [(190, 85), (250, 95)], [(215, 135), (232, 160)], [(120, 170), (140, 230)], [(293, 250), (293, 300)]]
SKY = [[(20, 40), (150, 40)], [(300, 60), (500, 60)], [(330, 110), (400, 110)],
       [(10, 110), (90, 110)], [(10, 150), (50, 150)]]
GRASS = [[(340, 262), (480, 262)], [(420, 300), (500, 450)], [(175, 350), (215, 470)]]
SKYLINE = [[(330, 203), (400, 206)], [(362, 172), (392, 172)], [(426, 135), (426, 185)],
           [(455, 200), (500, 205)]]

# coffee (400 x 600): the coffee, the cup and saucer, the wooden table
COFFEE = [[(230, 140), (330, 150)], [(260, 120), (320, 170)]]
CUP = [[(215, 60), (385, 60)], [(200, 215), (300, 235)], [(115, 240), (150, 320)],
       [(420, 185), (455, 240)], [(230, 345), (350, 350)]]
TABLE = [[(20, 150), (60, 350)], [(500, 60), (560, 350)], [(150, 392), (450, 392)],
         [(110, 10), (170, 10)], [(450, 25), (560, 25)], [(10, 10), (40, 30)]]


def draw(shape: tuple[int, int], labelled: list[list[list[tuple[int, int]]]]) -> np.ndarray:
    """Label image with each label's polylines drawn in (label = position in list + 1)."""
    out = np.zeros(shape, dtype=np.uint8)
    for label, lines in enumerate(labelled, start=1):
        pts = [np.array(line, dtype=np.int32).reshape(-1, 1, 2) for line in lines]
        cv2.polylines(out, pts, isClosed=False, color=label, thickness=WIDTH)
    return out


def cells_image() -> tuple[np.ndarray, np.ndarray]:
    """A synthetic micrograph (RGB, 270 x 360): three cells, each with a darker nucleus inside,
    on a pale background; and strokes 1 = background, 2 = cytoplasm, 3 = nucleus."""
    rng = np.random.default_rng(7)
    h, w = 270, 360
    img = np.empty((h, w, 3), np.float32)
    img[:] = (236, 226, 232)
    strokes = np.zeros((h, w), np.uint8)
    # the first nucleus lies against its cell's edge: only "apart" keeps a rim around it
    cells = [((95, 120), (70, 52), 20, (142, 128), (26, 20)),
             ((250, 95), (58, 50), -10, (258, 92), (20, 17)),
             ((225, 200), (80, 46), 15, (205, 196), (24, 18))]
    for centre, axes, angle, n_centre, n_axes in cells:
        cv2.ellipse(img, centre, axes, angle, 0, 360, (214, 150, 186), -1)
        cv2.ellipse(img, n_centre, n_axes, angle, 0, 360, (118, 62, 142), -1)
        x, y = n_centre
        cv2.line(strokes, (x - n_axes[0] // 2, y), (x + n_axes[0] // 2, y), 3, WIDTH)
        cx, cy = centre
        top = cy - int(axes[1] * 0.7)
        cv2.line(strokes, (cx - axes[0] // 3, top), (cx + axes[0] // 3, top), 2, WIDTH)
    img = cv2.GaussianBlur(img, (0, 0), 1.6) + rng.normal(0, 9, img.shape)
    for line in ([(10, 10), (350, 10)], [(10, 260), (350, 260)], [(8, 40), (8, 230)],
                 [(352, 40), (352, 230)], [(150, 240), (200, 250)]):
        cv2.line(strokes, line[0], line[1], 1, WIDTH)
    return np.clip(img, 0, 255).astype(np.uint8), strokes


def washer_image() -> tuple[np.ndarray, np.ndarray]:
    """A synthetic steel washer on a wooden table (RGB, 300 x 300): the hole shows the same
    wood as the outside; strokes 1 = table outside, 2 = washer, 3 = table seen through the hole."""
    rng = np.random.default_rng(11)
    h = w = 300
    yy, xx = np.mgrid[:h, :w].astype(np.float32)
    grain = 18 * np.sin(0.09 * yy + 0.6 * np.sin(0.021 * xx)) + rng.normal(0, 7, (h, w))
    img = np.stack([150 + grain, 105 + 0.8 * grain, 62 + 0.5 * grain], axis=2)
    r = np.hypot(yy - 150, xx - 150)
    ring = (r >= 48) & (r <= 112)
    shade = 175 + 35 * np.cos(np.arctan2(yy - 150, xx - 150) - 0.8)
    img[ring] = np.stack([shade, shade, shade + 6], axis=2)[ring]
    img = cv2.GaussianBlur(img.astype(np.float32), (0, 0), 1.2) + rng.normal(0, 5, img.shape)
    strokes = np.zeros((h, w), np.uint8)
    for line in ([(10, 12), (290, 12)], [(10, 288), (290, 288)], [(12, 30), (12, 270)]):
        cv2.line(strokes, line[0], line[1], 1, WIDTH)
    cv2.line(strokes, (150 - 20, 150), (150 + 20, 150), 3, WIDTH)
    cv2.line(strokes, (150, 150 - 95), (150 + 60, 150 - 75), 2, WIDTH)
    return np.clip(img, 0, 255).astype(np.uint8), strokes


def main() -> None:
    """Write the images and the stroke PNGs next to this script."""
    camera = skimage.data.camera()
    coffee = skimage.data.coffee()
    cv2.imwrite(str(HERE / "cameraman.png"), camera, [cv2.IMWRITE_PNG_COMPRESSION, 9])
    cv2.imwrite(str(HERE / "coffee.png"), cv2.cvtColor(coffee, cv2.COLOR_RGB2BGR),
                [cv2.IMWRITE_PNG_COMPRESSION, 9])
    strokes = {
        "cameraman_strokes_k2.png": draw(camera.shape, [MAN, SKY + GRASS + SKYLINE]),
        "cameraman_strokes_k3.png": draw(camera.shape, [MAN, SKY + SKYLINE, GRASS]),
        "cameraman_strokes_k4.png": draw(camera.shape, [MAN, SKY, GRASS, SKYLINE]),
        "coffee_strokes_k3.png": draw(coffee.shape[:2], [COFFEE, CUP, TABLE]),
    }
    for name, img in strokes.items():
        cv2.imwrite(str(HERE / name), img)
        logging.info("wrote %s", name)
    # the constraint samples (constraint_samples.json says which constraints each one takes)
    for stem, (image, lines) in (("cells", cells_image()), ("washer", washer_image())):
        cv2.imwrite(str(HERE / f"{stem}.png"), cv2.cvtColor(image, cv2.COLOR_RGB2BGR),
                    [cv2.IMWRITE_PNG_COMPRESSION, 9])
        cv2.imwrite(str(HERE / f"{stem}_strokes_k3.png"), lines)
        logging.info("wrote %s.png and its strokes", stem)
    # the washer's hole stroke is also a hard constraint: the hole looks like the outside, so
    # nothing but the user's word says it is a label of its own
    lines = cv2.imread(str(HERE / "washer_strokes_k3.png"), cv2.IMREAD_UNCHANGED)
    cv2.imwrite(str(HERE / "washer_hard_k3.png"), np.where(lines == 3, 3, 0).astype(np.uint8))


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    main()
