"""The ground-truth set of ``benchmarks/accuracy.py``: composites with exact masks, and the inputs
a person would give for them.

Every image is a composite: objects with exact masks pasted onto a real photo with a 1-2 px soft
alpha edge, ground truth = alpha >= 0.5 (so the truth is exact by construction). Everything comes
from images that ship with scikit-image (``skimage.data``, no download):

- backgrounds and textures: eight colour photos and six grey ones (a composite on a grey photo is
  made grey as a whole: a black-and-white photo);
- objects: the horse silhouette (``skimage.data.horse()``) filled with a texture cut from a photo,
  the scikit-image logo's disc (its own pixels, masked where the page is not white), the 24 coins
  of ``skimage.data.coins()`` (their own pixels; each mask is the convex hull of a threshold of the
  background-corrected image, eroded by 1 px: checked by eye, see :func:`coin_sources`), and smooth
  star-convex blobs (random Fourier radii) textured with patches of photos;
- K = 3: two objects (labels 1 and 2) on the background (label 3), or a blob with a distinct part
  (a smaller blob inside it with another texture: label 2).

Colour overlap is measured, not guessed: the Bhattacharyya coefficient of the object's and the
background's colour histograms (8 bins a channel, joint RGB; K = 3: the largest over the pairs of
labels). Each composite is drawn for a target (easy 0.15, medium 0.5, hard 0.8) as the nearest of
a dozen candidates (texture, photo, crops) rendered small; its tier is then read off the measured
value at full size (< 0.33 easy, < 0.66 medium, else hard).

The split is fixed, by source name: within each group (colour photos, grey photos, named shapes,
coins) the names ordered by a salted hash alternate tuning / held-out, and a composite of a half
draws its background, textures and named objects from that half only (blobs are in both). Both
halves are built from the same list of templates (object kind, K, size, target tier), so they are
balanced by construction. The composites do not depend on the run's seed; the inputs (rectangle
margins, strokes) do.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field, replace
from functools import lru_cache

import cv2
import numpy as np

SPLIT_SALT = "segapp-accuracy-v1"  # never change: it decides what is held out
DATA_SEED = 20_240_601  # the composites' seed (fixed: the set does not move with --seed)
HALVES = ("tuning", "held-out")

COLOUR_PHOTOS = ("astronaut", "coffee", "chelsea", "rocket", "immunohistochemistry",
                 "hubble_deep_field", "retina", "stereo_motorcycle")
GREY_PHOTOS = ("camera", "moon", "grass", "gravel", "brick", "clock")
SHAPES = ("horse", "logo")  # named objects with exact masks (coins are named coin00..coin23)
OWN_PIXELS = ("logo", "coin")  # objects pasted with their own pixels (the others are textured)

TIER_TARGET = {"easy": 0.15, "medium": 0.5, "hard": 0.8}
TIER_EDGES = (0.33, 0.66)
TIERS = ("easy", "medium", "hard")
CANDIDATES = {2: 12, 3: 30}  # K = 3 needs more: all three pairs must differ for an easy one
THUMB_PIXELS = 40_000

Box = tuple[int, int, int, int]  # x, y, w, h


# -- sources --------------------------------------------------------------------------------------

@lru_cache(maxsize=None)
def photo(name: str) -> np.ndarray:
    """A bundled photo as RGB uint8 ``(H, W, 3)`` (grey ones stacked)."""
    import skimage.data  # noqa: PLC0415

    img = getattr(skimage.data, name)()
    if isinstance(img, tuple):  # stereo_motorcycle: (left, right, disparity)
        img = img[0]
    img = np.asarray(img)
    if img.ndim == 2:
        img = np.repeat(img[:, :, None], 3, axis=2)
    img = img[:, :, :3]
    img.setflags(write=False)
    return img


@lru_cache(maxsize=1)
def coin_sources() -> tuple[tuple[np.ndarray, np.ndarray], ...]:
    """The 24 coins of ``skimage.data.coins()`` as ``(rgb, mask)`` crops, in reading order.

    The lighting is uneven, so the background (a grey opening wider than any coin, smoothed) is
    taken off first; the rest is Otsu's threshold at 0.6 of its value, holes filled, specks
    removed. A coin is convex: its mask is the convex hull of its component, eroded by 1 px so
    the dark felt round it stays out. Drawn over the photo the contours sit on every coin's rim.
    """
    import scipy.ndimage as ndi  # noqa: PLC0415
    import skimage.data  # noqa: PLC0415
    from skimage import filters, measure  # noqa: PLC0415

    grey = skimage.data.coins()
    smooth = cv2.GaussianBlur(grey, (0, 0), 1.5).astype(np.float64)
    ker = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (81, 81))
    bg = cv2.GaussianBlur(cv2.morphologyEx(smooth, cv2.MORPH_OPEN, ker), (0, 0), 15)
    lifted = smooth - bg
    mask = lifted > 0.6 * filters.threshold_otsu(lifted)
    mask = cv2.morphologyEx(mask.astype(np.uint8), cv2.MORPH_OPEN,
                            cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (5, 5))) > 0
    labels, _ = ndi.label(ndi.binary_fill_holes(mask))
    found = []
    for p in measure.regionprops(labels):
        if p.area < 500:
            continue
        y0, x0, y1, x1 = p.bbox
        hull = ndi.binary_erosion(p.image_convex, iterations=1)
        rgb = np.repeat(grey[y0:y1, x0:x1, None], 3, axis=2)
        cy, cx = p.centroid
        found.append((round(cy / 75), cx, rgb, hull))
    found.sort(key=lambda t: (t[0], t[1]))
    return tuple((rgb, m) for _, _, rgb, m in found)


COINS = tuple(f"coin{i:02d}" for i in range(24))


@lru_cache(maxsize=None)
def object_source(name: str) -> tuple[np.ndarray | None, np.ndarray]:
    """``(rgb or None, mask)`` of a named object: ``horse`` (a silhouette to texture), ``logo``
    (the scikit-image logo's disc: the convex hull of its non-white pixels, eroded by 2 px, its
    own pixels) or ``coinNN``."""
    import scipy.ndimage as ndi  # noqa: PLC0415
    import skimage.data  # noqa: PLC0415

    if name == "horse":
        mask = ~np.asarray(skimage.data.horse(), bool)  # (True is the white page)
        return None, mask
    if name == "logo":
        from skimage.morphology import convex_hull_image  # noqa: PLC0415

        rgb = np.asarray(skimage.data.logo())[:, :, :3]
        disc = convex_hull_image(np.any(rgb < 235, axis=2))  # (the white S is inside it)
        return rgb, ndi.binary_erosion(disc, iterations=2)
    if name.startswith("coin"):
        return coin_sources()[int(name[4:])]
    raise ValueError(f"unknown object source {name!r}")


# -- split ----------------------------------------------------------------------------------------

def _alternate(names: tuple[str, ...]) -> dict[str, str]:
    order = sorted(names, key=lambda n: hashlib.sha256(f"{SPLIT_SALT}:{n}".encode()).hexdigest())
    return {n: HALVES[i % 2] for i, n in enumerate(order)}


def split_of() -> dict[str, str]:
    """``{source name: "tuning" | "held-out"}`` for every named source: within each group
    (colour photos, grey photos, shapes, coins) the names ordered by a salted hash, alternately
    tuning and held-out. Fixed: no seed or option changes it."""
    out: dict[str, str] = {}
    for group in (COLOUR_PHOTOS, GREY_PHOTOS, SHAPES, COINS):
        out.update(_alternate(group))
    return out


def pool(half: str) -> dict[str, tuple[str, ...]]:
    """The sources a composite of ``half`` may draw from."""
    which = split_of()

    def mine(names: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(n for n in names if which[n] == half)

    return {"colour": mine(COLOUR_PHOTOS), "grey": mine(GREY_PHOTOS),
            "photos": mine(COLOUR_PHOTOS) + mine(GREY_PHOTOS), "shape": mine(SHAPES),
            "coin": mine(COINS)}


# -- recipes --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Layer:
    """One pasted object (or part), in size-free terms.

    ``source``: ``blob``, ``horse``, ``logo`` or ``coinNN``; ``label``: its ground-truth label;
    ``size``: its area as a fraction of the image (of its parent's, for a part); ``px, py``: where
    its bounding box sits within the room left for it (fractions; a part: its offset from the
    parent's centre as fractions of the parent's box); ``texture``: a photo and the crop
    ``(cx, cy, height)`` as fractions of it, None for an object's own pixels; ``parent``: the
    index of the layer a part lies inside.
    """

    source: str
    label: int
    size: float
    px: float
    py: float
    angle: float = 0.0
    flip: bool = False
    shape_seed: int = 0
    texture: str | None = None
    tex_crop: tuple[float, float, float] = (0.5, 0.5, 0.5)
    parent: int | None = None


@dataclass(frozen=True)
class Recipe:
    """A composite in size-free terms: the background photo and its crop ``(x0, y0, x1, y1)`` as
    fractions, the layers in paste order, the alpha ramp (half-width, px) and the noise (grey
    levels, sigma)."""

    background: str
    crop: tuple[float, float, float, float]
    layers: tuple[Layer, ...]
    edge: float = 1.5
    noise: float = 2.0
    flip: bool = False

    @property
    def grey(self) -> bool:
        return self.background in GREY_PHOTOS

    @property
    def k(self) -> int:
        return max(layer.label for layer in self.layers) + 1


@dataclass
class Composite:
    """A rendered composite: ``image`` RGB uint8, ``truth`` labels 1..K (K = background),
    ``alphas`` the soft alpha of each layer as pasted, and the measured colour overlap."""

    image: np.ndarray
    truth: np.ndarray
    alphas: list[np.ndarray]
    k: int
    overlap: float = 0.0
    overlap_near: float = 0.0

    @property
    def pixels(self) -> int:
        return int(self.truth.size)


def _shape_for(recipe: Recipe, pixels: int) -> tuple[int, int]:
    x0, y0, x1, y1 = recipe.crop
    ph, pw = photo(recipe.background).shape[:2]
    aspect = (x1 - x0) * pw / ((y1 - y0) * ph)
    h = max(16, round(math.sqrt(pixels / aspect)))
    return h, max(16, round(h * aspect))


def _background(recipe: Recipe, shape: tuple[int, int]) -> np.ndarray:
    src = photo(recipe.background)
    ph, pw = src.shape[:2]
    x0, y0, x1, y1 = recipe.crop
    crop = src[round(y0 * ph):round(y1 * ph), round(x0 * pw):round(x1 * pw)]
    return _resize(crop, shape)


def _resize(img: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    h, w = shape
    down = img.shape[0] * img.shape[1] > h * w
    out = cv2.resize(np.ascontiguousarray(img), (w, h),
                     interpolation=cv2.INTER_AREA if down else cv2.INTER_CUBIC)
    return out


def blob_polygon(seed: int, n: int = 720) -> np.ndarray:
    """A smooth star-convex shape round the origin with unit area: ``(n, 2)`` points.

    Radius r(t) = 1 + sum_j a_j cos(j t + phi_j), j = 2..6, a_j ~ U(0, 0.3) / j^0.7, scaled down
    where it would dip below 0.35 (no pinches)."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0, 2 * np.pi, n, endpoint=False)
    j = np.arange(2, 7)
    amp = rng.uniform(0, 0.3, j.size) / j ** 0.7
    phase = rng.uniform(0, 2 * np.pi, j.size)
    wave = (amp[:, None] * np.cos(j[:, None] * t[None] + phase[:, None])).sum(0)
    if wave.min() < -0.65:
        wave *= 0.65 / -wave.min()
    r = 1 + wave
    aspect = rng.uniform(0.7, 1.0)  # (some blobs are elongated)
    pts = np.stack([r * np.cos(t), aspect * r * np.sin(t)], axis=1)
    x, y = pts[:, 0], pts[:, 1]
    area = 0.5 * abs(np.dot(x, np.roll(y, 1)) - np.dot(y, np.roll(x, 1)))
    return pts / math.sqrt(area)


def _warp_mask(mask: np.ndarray, matrix: np.ndarray, shape: tuple[int, int],
               scale: float) -> np.ndarray:
    """A binary source mask through ``matrix`` onto ``shape``: bilinear, smoothed when enlarged
    (no staircase), threshold 1/2."""
    h, w = shape
    m = cv2.warpAffine(mask.astype(np.float32), matrix, (w, h), flags=cv2.INTER_LINEAR)
    if scale > 1.5:
        m = cv2.GaussianBlur(m, (0, 0), 0.35 * scale)
    return m >= 0.5


def _matrix(source_shape: tuple[int, int], scale: float, angle: float, flip: bool,
            centre: tuple[float, float]) -> np.ndarray:
    sh, sw = source_shape
    rot = cv2.getRotationMatrix2D(((sw - 1) / 2, (sh - 1) / 2), angle, scale)
    if flip:  # mirror the source first
        mirror = np.array([[-1, 0, sw - 1], [0, 1, 0], [0, 0, 1]], np.float64)
        rot = rot @ mirror
    rot[0, 2] += centre[0] - (sw - 1) / 2
    rot[1, 2] += centre[1] - (sh - 1) / 2
    return rot


def _layer_mask(layer: Layer, shape: tuple[int, int], area: float,
                centre: tuple[float, float]) -> tuple[np.ndarray, np.ndarray | None]:
    """The layer's binary mask of ``area`` pixels centred at ``centre``, and its own pixels
    warped the same way (None for a textured layer)."""
    h, w = shape
    if layer.source == "blob":
        pts = blob_polygon(layer.shape_seed) * math.sqrt(area)
        a = math.radians(layer.angle)
        rot = np.array([[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]])
        pts = pts @ rot.T + np.asarray(centre)
        mask = np.zeros(shape, np.uint8)
        cv2.fillPoly(mask, [np.round(pts * 16).astype(np.int32)], 1, lineType=cv2.LINE_8,
                     shift=4)
        return mask > 0, None
    rgb, src = object_source(layer.source)
    scale = math.sqrt(area / max(1, int(src.sum())))
    matrix = _matrix(src.shape, scale, layer.angle, layer.flip, centre)
    mask = _warp_mask(src, matrix, shape, scale)
    own = None
    if rgb is not None:
        own = cv2.warpAffine(np.ascontiguousarray(rgb), matrix, (w, h), flags=cv2.INTER_CUBIC,
                             borderMode=cv2.BORDER_REPLICATE)
    return mask, own


def _bbox(mask: np.ndarray) -> tuple[int, int, int, int] | None:
    ys, xs = np.nonzero(mask)
    if ys.size == 0:
        return None
    return int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1


def soft_alpha(mask: np.ndarray, edge: float) -> np.ndarray:
    """A soft alpha for a binary mask: a linear ramp across its boundary, ``edge`` px each side.

    With ``sd`` the signed distance of a pixel centre to the boundary (inside > 0: the distance
    to the nearest outside pixel less 1/2; outside < 0 likewise), alpha = clip(1/2 + sd / (2
    edge), 0, 1). Every pixel has |sd| >= 1/2, so alpha >= 1/2 exactly on the mask: the ground
    truth alpha >= 0.5 is the mask itself.
    """
    m = mask.astype(np.uint8)
    pad = 1
    inside = cv2.distanceTransform(np.pad(m, pad, constant_values=1), cv2.DIST_L2,
                                   cv2.DIST_MASK_PRECISE)[pad:-pad, pad:-pad]
    outside = cv2.distanceTransform(np.pad(1 - m, pad, constant_values=1), cv2.DIST_L2,
                                    cv2.DIST_MASK_PRECISE)[pad:-pad, pad:-pad]
    sd = np.where(mask, inside - 0.5, -(outside - 0.5))
    return np.clip(0.5 + sd / (2 * edge), 0.0, 1.0).astype(np.float32)


def _texture(layer: Layer, box: tuple[int, int, int, int], shape: tuple[int, int]) -> np.ndarray:
    """The layer's texture over the whole image (only its box matters): a crop of its photo with
    the box's aspect, resized to the box."""
    x0, y0, x1, y1 = box
    bw, bh = max(1, x1 - x0), max(1, y1 - y0)
    src = photo(layer.texture)
    ph, pw = src.shape[:2]
    cx, cy, fh = layer.tex_crop
    ch = max(8, round(fh * ph))
    cw = max(8, round(ch * bw / bh))
    if cw > pw:  # (too wide: shrink both)
        ch, cw = max(8, round(ch * pw / cw)), pw
    ch = min(ch, ph)
    xa = int(np.clip(round(cx * pw - cw / 2), 0, pw - cw))
    ya = int(np.clip(round(cy * ph - ch / 2), 0, ph - ch))
    patch = src[ya:ya + ch, xa:xa + cw]
    if layer.flip:
        patch = patch[:, ::-1]
    out = np.zeros((*shape, 3), np.uint8)
    out[y0:y1, x0:x1] = _resize(patch, (bh, bw))
    return out


def render(recipe: Recipe, pixels: int, noise_seed: int = 0) -> Composite:
    """The composite of ``recipe`` at about ``pixels`` pixels."""
    shape = _shape_for(recipe, pixels)
    h, w = shape
    image = _background(recipe, shape).astype(np.float32)
    if recipe.flip:
        image = image[:, ::-1]
    truth = np.full(shape, recipe.k, np.int32)
    masks: list[np.ndarray] = []
    alphas: list[np.ndarray] = []
    boxes: list[tuple[int, int, int, int]] = []
    edge = recipe.edge
    for layer in recipe.layers:
        if layer.parent is None:
            area = layer.size * h * w
            mask, own = _layer_mask(layer, shape, area, (w / 2, h / 2))
            x0, y0, x1, y1 = _bbox(mask)
            bw, bh = x1 - x0, y1 - y0
            mx, my = 0.12 * bw + 2, 0.12 * bh + 2  # (room for the rectangle's margin)
            room_x, room_y = w - bw - 2 * mx, h - bh - 2 * my
            dx = mx + layer.px * max(0.0, room_x) - x0 if room_x > 0 else (w - bw) / 2 - x0
            dy = my + layer.py * max(0.0, room_y) - y0 if room_y > 0 else (h - bh) / 2 - y0
            dx, dy = round(dx), round(dy)
            mask, own = _layer_mask(layer, shape, area, (w / 2 + dx, h / 2 + dy))
        else:
            parent_mask, (px0, py0, px1, py1) = masks[layer.parent], boxes[layer.parent]
            area = layer.size * float(parent_mask.sum())
            centre = ((px0 + px1) / 2 + layer.px * (px1 - px0),
                      (py0 + py1) / 2 + layer.py * (py1 - py0))
            mask, own = _layer_mask(layer, shape, area, centre)
            keep = max(3, round(0.06 * min(px1 - px0, py1 - py0)))
            inner = cv2.erode(parent_mask.astype(np.uint8),
                              cv2.getStructuringElement(cv2.MORPH_ELLIPSE,
                                                        (2 * keep + 1, 2 * keep + 1))) > 0
            mask &= inner
        box = _bbox(mask) or (0, 0, 1, 1)
        appearance = own if own is not None else _texture(layer, box, shape)
        alpha = soft_alpha(mask, edge)
        image = image * (1 - alpha[:, :, None]) + appearance.astype(np.float32) * alpha[:, :, None]
        truth[mask] = layer.label
        masks.append(mask)
        alphas.append(alpha)
        boxes.append(box)
    if recipe.grey:  # (a black-and-white photo: the objects too)
        image = np.repeat((image @ np.array([0.299, 0.587, 0.114], np.float32))[:, :, None],
                          3, axis=2)
    if recipe.noise > 0:
        rng = np.random.default_rng(noise_seed)
        image = image + rng.normal(0, recipe.noise, (h, w, 1 if recipe.grey else 3))
    image = np.clip(np.round(image), 0, 255).astype(np.uint8)
    comp = Composite(np.ascontiguousarray(image), truth, alphas, recipe.k)
    comp.overlap, comp.overlap_near = colour_overlap(comp.image, truth)
    return comp


# -- overlap --------------------------------------------------------------------------------------

def _hist(pixels: np.ndarray, bins: int = 8) -> np.ndarray:
    q = (pixels.astype(np.int32) * bins) // 256
    idx = (q[:, 0] * bins + q[:, 1]) * bins + q[:, 2]
    hist = np.bincount(idx, minlength=bins ** 3).astype(np.float64)
    return hist / max(1.0, hist.sum())


def bhattacharyya(a: np.ndarray, b: np.ndarray, bins: int = 8) -> float:
    """Bhattacharyya coefficient of the colour histograms (``bins`` a channel, joint RGB) of two
    ``(N, 3)`` pixel sets: 1 = the same distribution, 0 = no colour in common."""
    if a.size == 0 or b.size == 0:
        return 0.0
    return float(np.sqrt(_hist(a, bins) * _hist(b, bins)).sum())


def colour_overlap(image: np.ndarray, truth: np.ndarray) -> tuple[float, float]:
    """``(overlap, overlap_near)``: the largest Bhattacharyya coefficient over pairs of labels
    (K = 2: object against background) over the whole image, and the same with the background
    taken only within the objects' bounding box enlarged by a quarter on each side (where a
    rectangle's inside lies)."""
    k = int(truth.max())
    flat = image.reshape(-1, 3)
    lab = truth.ravel()
    whole = max(bhattacharyya(flat[lab == a], flat[lab == b])
                for a in range(1, k + 1) for b in range(a + 1, k + 1))
    ys, xs = np.nonzero(truth < k)
    h, w = truth.shape
    my, mx = (ys.max() - ys.min()) // 4 + 1, (xs.max() - xs.min()) // 4 + 1
    win = (slice(max(0, ys.min() - my), min(h, ys.max() + my + 1)),
           slice(max(0, xs.min() - mx), min(w, xs.max() + mx + 1)))
    sub, sl = image[win].reshape(-1, 3), truth[win].ravel()
    near = max(bhattacharyya(sub[sl == a], sub[sl == b])
               for a in range(1, k + 1) for b in range(a + 1, k + 1))
    return whole, near


def tier_of(overlap: float) -> str:
    """easy / medium / hard from a measured overlap."""
    return TIERS[int(np.searchsorted(TIER_EDGES, overlap, side="right"))]


# -- the case list ---------------------------------------------------------------------------------

#: One half's composites: (object kind, K, megapixels). Target tiers cycle easy, medium, hard
#: within each kind; the blobs' sizes are a Latin square over the tiers.
TEMPLATES: tuple[tuple[str, int, float], ...] = (
    ("shape", 2, 0.1), ("shape", 2, 0.3), ("shape", 2, 1.0), ("shape", 2, 0.3), ("shape", 2, 3.0),
    ("coin", 2, 0.1), ("coin", 2, 0.1), ("coin", 2, 0.3), ("coin", 2, 0.3),
    ("blob", 2, 0.1), ("blob", 2, 0.3), ("blob", 2, 1.0),
    ("blob", 2, 0.3), ("blob", 2, 1.0), ("blob", 2, 0.1),
    ("blob", 2, 1.0), ("blob", 2, 0.1), ("blob", 2, 0.3),
    ("two", 3, 0.1), ("two", 3, 0.3), ("two", 3, 1.0),
    ("part", 3, 0.1), ("part", 3, 0.3), ("part", 3, 1.0),
)
#: ``--quick``: these templates of each half, at :data:`QUICK_PIXELS`.
QUICK = (0, 9, 21)
QUICK_PIXELS = 20_000


@dataclass(frozen=True)
class Case:
    """One composite of the set: its half, index, object kind, K, size and target tier."""

    split: str
    index: int
    kind: str
    k: int
    pixels: int
    target: str

    @property
    def name(self) -> str:
        return f"{'T' if self.split == 'tuning' else 'H'}{self.index:02d}-{self.kind}"

    @property
    def key(self) -> str:
        return f"{self.split}/{self.index}/{self.kind}/k{self.k}"


def cases(split: str = "both", max_pixels: float = 3e6, quick: bool = False) -> list[Case]:
    """The case list: :data:`TEMPLATES` for each half asked for, those above ``max_pixels`` left
    out (``quick``: three templates a half at :data:`QUICK_PIXELS`)."""
    halves = HALVES if split == "both" else (split,)
    out = []
    for half in halves:
        count: dict[str, int] = {}
        for i, (kind, k, mp) in enumerate(TEMPLATES):
            j = count.get(kind, 0)
            count[kind] = j + 1
            pixels = round(mp * 1e6)
            if quick:
                if i not in QUICK:
                    continue
                pixels = min(QUICK_PIXELS, int(max_pixels))
            elif pixels > max_pixels * 1.0001:
                continue
            out.append(Case(half, i, kind, k, pixels, TIERS[j % 3]))
    return out


def _seed(*parts: object) -> int:
    digest = hashlib.sha256(":".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:8], "little")


def _candidate(case: Case, rng: np.random.Generator) -> Recipe:
    """A random recipe for ``case`` from its half's sources."""
    src = pool(case.split)
    photos = src["photos"]

    def texture_layer(**kw: object) -> Layer:
        tex = str(rng.choice(photos))
        return Layer(texture=tex, tex_crop=(rng.uniform(0.2, 0.8), rng.uniform(0.2, 0.8),
                                            rng.uniform(0.25, 0.7)), **kw)

    background = str(rng.choice(photos))
    angle = float(rng.uniform(-25, 25))
    flip = bool(rng.integers(2))
    common = dict(px=float(rng.uniform()), py=float(rng.uniform()), angle=angle, flip=flip,
                  shape_seed=int(rng.integers(1 << 31)))
    if case.kind == "shape":
        name = src["shape"][0]
        size = rng.uniform(0.08, 0.22)
        layers = ((Layer(source=name, label=1, size=size, **common),) if name in OWN_PIXELS
                  else (texture_layer(source=name, label=1, size=size, **common),))
    elif case.kind == "coin":
        name = str(rng.choice(src["coin"]))
        common["angle"] = float(rng.uniform(-180, 180))
        layers = (Layer(source=name, label=1, size=rng.uniform(0.03, 0.09), **common),)
    elif case.kind == "blob":
        layers = (texture_layer(source="blob", label=1, size=rng.uniform(0.06, 0.25), **common),)
    elif case.kind == "two":
        half_left = dict(common, px=float(rng.uniform(0, 0.3)))
        second = dict(common, px=float(rng.uniform(0.7, 1.0)), py=float(rng.uniform()),
                      shape_seed=int(rng.integers(1 << 31)), angle=float(rng.uniform(-25, 25)))
        other = ("blob", "coin", "shape")[case.index % 3]
        a = texture_layer(source="blob", label=1, size=rng.uniform(0.05, 0.12), **half_left)
        if other == "blob":
            b = texture_layer(source="blob", label=2, size=rng.uniform(0.04, 0.1), **second)
        else:
            name = str(rng.choice(src[other]))
            if name in OWN_PIXELS or other == "coin":
                b = Layer(source=name, label=2, size=rng.uniform(0.03, 0.08), **second)
            else:
                b = texture_layer(source=name, label=2, size=rng.uniform(0.05, 0.1), **second)
        layers = (a, b)
    elif case.kind == "part":
        outer = texture_layer(source="blob", label=1, size=rng.uniform(0.12, 0.3), **common)
        inner = texture_layer(source="blob", label=2, size=rng.uniform(0.15, 0.35),
                              px=float(rng.uniform(-0.12, 0.12)),
                              py=float(rng.uniform(-0.12, 0.12)),
                              angle=float(rng.uniform(-90, 90)),
                              shape_seed=int(rng.integers(1 << 31)), parent=0)
        layers = (outer, inner)
    else:
        raise ValueError(f"unknown object kind {case.kind!r}")
    ph, pw = photo(background).shape[:2]
    aspect = rng.choice([4 / 3, 3 / 2, 1.0, 3 / 4])
    fw = rng.uniform(0.6, 1.0)
    fh = min(1.0, fw * pw / ph / aspect)
    fw = fh * ph * aspect / pw
    x0, y0 = rng.uniform(0, 1 - fw), rng.uniform(0, 1 - fh)
    return Recipe(background=background, crop=(x0, y0, x0 + fw, y0 + fh), layers=layers,
                  edge=float(rng.uniform(1.0, 2.0)), noise=float(rng.uniform(1.0, 3.0)),
                  flip=bool(rng.integers(2)))


def _separate(recipe: Recipe) -> Recipe:
    """K = 3 with two objects: move the second along x until the two do not touch (3 px gap at
    the thumbnail's size)."""
    if len(recipe.layers) < 2 or recipe.layers[1].parent is not None:
        return recipe
    a, b = recipe.layers
    for px in np.linspace(b.px, 1.0, 6).tolist() + [1.0]:
        for py in (b.py, 1 - a.py):
            trial = replace(recipe, layers=(a, replace(b, px=px, py=py)))
            comp = render(trial, THUMB_PIXELS)
            one = cv2.dilate((comp.truth == 1).astype(np.uint8), np.ones((7, 7), np.uint8)) > 0
            two = comp.truth == 2
            if two.sum() > 0.5 * b.size * comp.pixels and not np.any(one & two):
                return trial
    return replace(recipe, layers=(a, replace(b, px=1.0, py=1.0 - a.py, size=0.6 * b.size)))


@lru_cache(maxsize=None)
def recipe_for(case: Case) -> Recipe:
    """The case's recipe: of :data:`CANDIDATES` (per K) random ones, the one whose colour
    overlap (at a thumbnail's size) is nearest the case's target tier. Independent of the run's
    seed."""
    rng = np.random.default_rng(_seed(DATA_SEED, SPLIT_SALT, case.key))
    best, best_d = None, math.inf
    for _ in range(CANDIDATES[case.k]):
        cand = _separate(_candidate(case, rng))
        over = render(cand, THUMB_PIXELS).overlap
        d = abs(over - TIER_TARGET[case.target])
        if d < best_d:
            best, best_d = cand, d
    return best


def composite(case: Case) -> Composite:
    """The case's composite at its size."""
    return render(recipe_for(case), case.pixels, noise_seed=_seed(DATA_SEED, case.key))


def describe(recipe: Recipe) -> dict:
    """The recipe's sources, for the records."""
    return {"background": recipe.background,
            "objects": [layer.source for layer in recipe.layers],
            "textures": [layer.texture for layer in recipe.layers],
            "edge_px": round(recipe.edge, 2), "noise": round(recipe.noise, 2),
            "grey": recipe.grey}


# -- inputs ---------------------------------------------------------------------------------------

INPUT_KINDS = ("rect", "rect+strokes", "strokes")


@dataclass
class Input:
    """What a person gives for a composite: a rectangle and/or strokes (labels 1..K, 0 none)."""

    kind: str
    rect: Box | None = None
    strokes: np.ndarray | None = None
    extras: dict = field(default_factory=dict)


def interior(mask: np.ndarray) -> np.ndarray:
    """Distance of each pixel of ``mask`` to the nearest pixel outside it (the image border
    counts as outside)."""
    padded = np.pad(mask.astype(np.uint8), 1)
    return cv2.distanceTransform(padded, cv2.DIST_L2, 5)[1:-1, 1:-1]


def bounding_rect(truth: np.ndarray, rng: np.random.Generator, k: int = 2) -> Box:
    """The objects' bounding box (labels < K) enlarged on each side by a random 3-10 % of its
    width / height, clipped to the image."""
    h, w = truth.shape
    ys, xs = np.nonzero(truth < k)
    x0, x1, y0, y1 = xs.min(), xs.max() + 1, ys.min(), ys.max() + 1
    bw, bh = x1 - x0, y1 - y0
    m = rng.uniform(0.03, 0.10, 4)
    xa = max(0, int(math.floor(x0 - m[0] * bw)))
    ya = max(0, int(math.floor(y0 - m[1] * bh)))
    xb = min(w, int(math.ceil(x1 + m[2] * bw)))
    yb = min(h, int(math.ceil(y1 + m[3] * bh)))
    if (xa, ya, xb, yb) == (0, 0, w, h):
        xa = 1  # (something must stay outside)
    return xa, ya, xb - xa, yb - ya


def stroke_scale(shape: tuple[int, int]) -> float:
    """Stroke sizes grow with the image above 1 MP (with its diagonal); 1 up to 1 MP."""
    return max(1.0, math.sqrt(shape[0] * shape[1] / 1e6))


def _stroke(out: np.ndarray, region: np.ndarray, dist: np.ndarray, centre: tuple[int, int],
            label: int, width: int, length: float, rng: np.random.Generator) -> None:
    """A straight stroke through ``centre``, ``length`` long at a random angle, cut where it
    would leave the region (its pen kept inside), drawn only on the region's pixels."""
    h, w = region.shape
    angle = rng.uniform(0, math.pi)
    dx, dy = math.cos(angle), math.sin(angle)
    keep = width / 2 + 1
    ends = []
    for sign in (-1, 1):
        t = 0.0
        while t + 1 <= length / 2:
            x = round(centre[0] + sign * (t + 1) * dx)
            y = round(centre[1] + sign * (t + 1) * dy)
            if not (0 <= x < w and 0 <= y < h) or dist[y, x] < keep:
                break
            t += 1
        ends.append((round(centre[0] + sign * t * dx), round(centre[1] + sign * t * dy)))
    pen = np.zeros(region.shape, np.uint8)
    cv2.line(pen, ends[0], ends[1], 1, thickness=width)
    out[(pen > 0) & region] = label


def spread_points(dist: np.ndarray, count: int, depth: float, spread: float,
            rng: np.random.Generator) -> list[tuple[int, int]]:
    """Up to ``count`` random (x, y) points at least ``depth`` inside (or as deep as the region
    goes), each ``spread`` px from the ones before where possible."""
    depth = max(1.0, min(depth, float(dist.max())))
    ys, xs = np.nonzero(dist >= depth)
    pts: list[tuple[int, int]] = []
    for _ in range(count):
        if xs.size == 0:
            break
        ok = np.ones(xs.size, bool)
        for px, py in pts:
            ok &= (xs - px) ** 2 + (ys - py) ** 2 >= spread ** 2
        pick = np.nonzero(ok)[0] if ok.any() else np.arange(xs.size)
        i = int(pick[rng.integers(pick.size)])
        pts.append((int(xs[i]), int(ys[i])))
    return pts


def draw_strokes(strokes: np.ndarray, region: np.ndarray, label: int, count: int,
                 rng: np.random.Generator) -> None:
    """``count`` short strokes of ``label`` inside ``region``: 3-5 px wide, 10-40 px long (both
    times :func:`stroke_scale`), at random deep points spread over the region."""
    s = stroke_scale(region.shape)
    dist = interior(region)
    if dist.max() <= 0:
        return
    width = int(round(rng.integers(3, 6) * s))
    spread = 0.2 * math.sqrt(float(region.sum()))
    for p in spread_points(dist, count, width / 2 + 3, spread, rng):
        _stroke(strokes, region, dist, p, label, width, rng.uniform(10, 40) * s, rng)
    if not np.any(strokes == label):  # (a label always gets some pixels)
        y, x = np.unravel_index(int(np.argmax(dist)), dist.shape)
        disk = np.zeros(region.shape, np.uint8)
        cv2.circle(disk, (int(x), int(y)), 2, 1, -1)
        strokes[(disk > 0) & region] = label


def make_inputs(case: Case, comp: Composite, seed: int) -> list[Input]:
    """The inputs of a case: K = 2: ``rect``, ``rect+strokes`` (the same rectangle and 1-3
    strokes: background inside the rectangle first where there is room, then object, in turn)
    and ``strokes`` (2-3 a label); K = 3: ``strokes``. Deterministic in ``seed`` and the case."""
    truth, k = comp.truth, comp.k
    rng = np.random.default_rng(_seed(seed, "inputs", case.key))
    out = []
    if k == 2:
        rect = bounding_rect(truth, rng)
        out.append(Input("rect", rect=rect))
        x, y, w, h = rect
        inside = np.zeros(truth.shape, bool)
        inside[y:y + h, x:x + w] = True
        strokes = np.zeros(truth.shape, np.uint8)
        n = int(rng.integers(1, 4))
        band = inside & (truth == 2)
        room = float(interior(band).max()) >= 3 * stroke_scale(truth.shape)
        labels = [2, 1, 2] if room else [1, 1, 1]
        for label in labels[:n]:
            draw_strokes(strokes, band if label == 2 else truth == 1, label, 1, rng)
        out.append(Input("rect+strokes", rect=rect, strokes=strokes))
    strokes = np.zeros(truth.shape, np.uint8)
    for label in range(1, k + 1):
        draw_strokes(strokes, truth == label, label, int(rng.integers(2, 4)), rng)
    out.append(Input("strokes", strokes=strokes))
    return out
