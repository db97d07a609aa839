"""Bounded store of downsampled solution frames for the replay slider (numpy only)."""
from __future__ import annotations

import numpy as np

from segapp.core.colouring import downsample


class FrameStore:
    """Keeps at most ``capacity`` frames of (h, w, K) label weights as uint8.

    When full, every other stored frame is dropped, so the frames stay spread
    over the whole run and memory stays bounded.

    Parameters
    ----------
    capacity : int
        Maximum number of frames kept.
    max_side : int
        Frames are stride-downsampled so their longer side is at most this.
    """

    def __init__(self, capacity: int = 120, max_side: int = 320) -> None:
        self.capacity = capacity
        self.max_side = max_side
        self.iterations: list[int] = []
        self.frames: list[np.ndarray] = []

    def clear(self) -> None:
        """Drop all frames."""
        self.iterations.clear()
        self.frames.clear()

    def add(self, iteration: int, probs: np.ndarray) -> None:
        """Store a frame of (H, W, K) weights in [0, 1] for ``iteration``."""
        small = downsample(np.asarray(probs), self.max_side)
        q = np.clip(small * 255.0 + 0.5, 0, 255).astype(np.uint8)
        if self.iterations and self.iterations[-1] == iteration:
            self.frames[-1] = q
            return
        self.iterations.append(int(iteration))
        self.frames.append(q)
        if len(self.frames) > self.capacity:
            # keep the first and the newest; thin the middle
            keep = list(range(0, len(self.frames) - 1, 2)) + [len(self.frames) - 1]
            self.iterations = [self.iterations[i] for i in keep]
            self.frames = [self.frames[i] for i in keep]

    def __len__(self) -> int:
        return len(self.frames)

    def get(self, index: int) -> tuple[int, np.ndarray]:
        """``(iteration, float32 weights)`` of stored frame ``index``."""
        return self.iterations[index], self.frames[index].astype(np.float32) / 255.0

    def nbytes(self) -> int:
        """Memory held by the frames."""
        return sum(f.nbytes for f in self.frames)
