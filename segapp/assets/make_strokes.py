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


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    main()
