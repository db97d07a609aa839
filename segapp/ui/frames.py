"""Bounded store of downsampled solution frames for the replay slider (numpy only)."""
from __future__ import annotations

import numpy as np

from segapp.core.colouring import downsample

#: What the replay of one run may hold, in bytes. A frame is at most ``max_side``² × K bytes
#: (uint8 weights): 320² × 8 labels = 0.8 MB, so the default 120 frames stay under 100 MB and
#: this cap rarely bites; it bounds a store built with more frames or larger ones. When an
#: added frame would take the store over it, the stored frames are thinned (every other one,
#: the first and the newest kept), as when the frame count is reached; a single frame larger
#: than half the cap is stored at a coarser stride, so that the first and the last always fit.
DEFAULT_MAX_BYTES = 256 * 2**20


class FrameStore:
    """Keeps at most ``capacity`` frames, and at most ``max_bytes`` bytes, of (h, w, K) label
    weights as uint8.

    When either limit is passed, every other stored frame is dropped (the first and the newest
    are kept), so the frames stay spread over the whole run and memory stays bounded; a
    finished run's replay holds its frames until the next run or image (:meth:`clear`).

    Parameters
    ----------
    capacity : int
        Maximum number of frames kept (at least 2).
    max_side : int
        Frames are stride-downsampled so their longer side is at most this.
    max_bytes : int
        Maximum bytes held by the frames (:data:`DEFAULT_MAX_BYTES`).
    """

    def __init__(self, capacity: int = 120, max_side: int = 320,
                 max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.capacity = max(int(capacity), 2)
        self.max_side = max_side
        self.max_bytes = int(max_bytes)
        self.iterations: list[int] = []
        self.frames: list[np.ndarray] = []
        self._nbytes = 0

    def clear(self) -> None:
        """Drop all frames."""
        self.iterations.clear()
        self.frames.clear()
        self._nbytes = 0

    def add(self, iteration: int, probs: np.ndarray) -> None:
        """Store a frame of (H, W, K) weights in [0, 1] for ``iteration``."""
        small = downsample(np.asarray(probs), self.max_side)
        while small.size > self.max_bytes // 2 and max(small.shape[:2]) > 1:
            small = small[::2, ::2]  # (two such frames, the first and the last, must fit;
            #                           stored as uint8, a frame takes ``size`` bytes)
        q = np.clip(small * 255.0 + 0.5, 0, 255).astype(np.uint8)
        if self.iterations and self.iterations[-1] == iteration:
            self._nbytes += q.nbytes - self.frames[-1].nbytes
            self.frames[-1] = q
        else:
            self.iterations.append(int(iteration))
            self.frames.append(q)
            self._nbytes += q.nbytes
        while len(self.frames) > 2 and (len(self.frames) > self.capacity
                                        or self._nbytes > self.max_bytes):
            # keep the first and the newest; thin the middle
            keep = list(range(0, len(self.frames) - 1, 2)) + [len(self.frames) - 1]
            self.iterations = [self.iterations[i] for i in keep]
            self.frames = [self.frames[i] for i in keep]
            self._nbytes = sum(f.nbytes for f in self.frames)

    def __len__(self) -> int:
        return len(self.frames)

    def get(self, index: int) -> tuple[int, np.ndarray]:
        """``(iteration, float32 weights)`` of stored frame ``index``."""
        return self.iterations[index], self.frames[index].astype(np.float32) / 255.0

    def nbytes(self) -> int:
        """Memory held by the frames."""
        return self._nbytes
