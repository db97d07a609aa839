"""How much memory a segmentation needs, checked against what the machine has before anything
is built.

A photo too large for the machine used to end the process: PyMaxflow's graph allocation calls
``exit(1)`` when it fails, and numpy's allocations raise ``MemoryError`` deep inside a solve. The
estimate is linear in the pixels and the labels, from peak resident memory measured with
``/usr/bin/time`` on ``segapp segment`` (docs/performance.md, Memory; 2026-11-27, since the
solvers read a photo's Laplacian from its weights): 136-218 bytes a pixel for K = 2 and 650-790
for K = 4 between 1 and 4 megapixels, the min-cut or α-expansion reference adding less than
the solve's own peak. It is rounded up, so a refused image would at least have come close to
the limit.

What the machine has is the least of its available memory (``/proc/meminfo``), the room under
``ulimit -v``, and the room under this process's cgroup memory limits (v2 ``memory.max`` less
``memory.current``, v1 ``memory.limit_in_bytes`` less ``memory.usage_in_bytes``, at its cgroup
and every ancestor): a container or systemd unit's limit kills the process with no word
(status 137) when it is crossed.
"""

from __future__ import annotations

import math
from pathlib import Path

try:
    import resource
except ImportError:  # pragma: no cover - not on Windows: no address-space limit to read
    resource = None

#: Resident memory before the image: the interpreter, numpy, scipy, numba's kernels (bytes).
BASE_BYTES = 700e6
#: Bytes a pixel of the model and ADMM's arrays: a part for two labels (ADMM's K = 2 system has
#: one variable a pixel), and one for each label above two.
PIXEL_BYTES = 250.0
LABEL_BYTES = 300.0
#: What the reference adds a pixel on top of the solve (its graph lives beside the model).
REFERENCE_BYTES = 100.0
#: The same when the reference runs in a child process (the app): the child's own peak, its copy
#: of the problem and its min-cut graph, which comes on top of the solve's peak since the child
#: solves beside it. Measured (2026-11-29, the coffee photo with a rectangle, the resident
#: memory of both processes sampled every 10 ms): the child's peak 3.11 GB at 6 MP and 5.99 GB at
#: 12 MP, about 475 bytes a pixel over its 0.3 GB start; both processes together 4.20 and 7.70
#: GB, the parent alone 1.33 and 2.35 GB.
ISOLATED_REFERENCE_BYTES = 500.0
#: The same when the child solves before the solve starts (where both at once would not fit):
#: its copy of the problem and graph are then released, or idle, by the solve's peak (the two
#: processes together 3.72 GB at 6 MP, the child's peak 3.11 GB of it).
ISOLATED_FIRST_BYTES = 300.0


#: What a refusal says when the image would fit without the reference (a front end may offer it).
WITHOUT_REFERENCE = "leave out the reference"


class InsufficientMemoryError(ValueError):
    """The machine has too little memory for a segmentation; the message says how much each
    choice needs and what is available."""


def estimate_bytes(pixels: int, k: int, reference: bool, isolated: bool = False,
                   beside: bool = True) -> float:
    """Peak resident memory of a segmentation.

    Parameters
    ----------
    pixels : int
        Image pixels.
    k : int
        Labels.
    reference : bool
        Whether the min-cut / α-expansion reference runs too.
    isolated : bool
        The reference runs in a child process (its own copy of the problem).
    beside : bool
        With ``isolated``: the child solves at the same time as the solve (the app's way), so
        its peak adds to the solve's; False: before it.

    Returns
    -------
    float
        Bytes.
    """
    extra = 0.0
    if reference:
        extra = (REFERENCE_BYTES if not isolated
                 else ISOLATED_REFERENCE_BYTES if beside else ISOLATED_FIRST_BYTES)
    return BASE_BYTES + (PIXEL_BYTES + LABEL_BYTES * max(k - 2, 0) + extra) * float(pixels)


def _meminfo_available() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return float(line.split()[1]) * 1024.0
    except (OSError, ValueError, IndexError):
        return None
    return None


def _address_space_left() -> float | None:
    """Room under ``RLIMIT_AS`` (ulimit -v), counting this process's resident memory as used
    (its virtual size includes reservations that never become memory)."""
    if resource is None:  # pragma: no cover
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        return None
    mapped = _status_bytes("VmSize")
    return float(soft) if mapped is None else max(0.0, soft - mapped)


#: A cgroup v1 limit at or above this means "no limit" (the kernel reports 2**63 less a page).
_V1_UNLIMITED = 2.0**60


def _read_number(path: Path) -> float | None:
    """A file's single number; None for "max", a missing file or anything unreadable."""
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    try:
        return float(text)
    except ValueError:  # ("max": no limit)
        return None


def _inactive_file(stat: Path, key: str) -> float:
    """The page cache the kernel reclaims before it kills (``memory.stat``'s ``key``)."""
    try:
        for line in stat.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == key:
                return float(value)
    except (OSError, ValueError):
        pass
    return 0.0


def _cgroup_dirs(proc_cgroup: Path, root: Path) -> tuple[list[Path], list[Path]]:
    """This process's cgroup folders and their ancestors, v2 (unified) then v1 (memory
    controller), innermost first, that exist under ``root``.

    In a container the path ``/proc/self/cgroup`` names may be the host's while the container
    sees its own cgroup mounted at the root, so the root (and, for v1, the controller's mount)
    is always a candidate too."""
    try:
        lines = proc_cgroup.read_text().splitlines()
    except OSError:
        return [], []
    v2: list[Path] = []
    v1: list[Path] = []
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, rel = parts
        if controllers == "":
            bases, out = [root, root / "unified"], v2
        elif "memory" in controllers.split(","):
            bases, out = [root / "memory", root / controllers], v1
        else:
            continue
        rel_parts = [q for q in rel.strip("/").split("/") if q]
        for base in bases:
            for depth in range(len(rel_parts), -1, -1):
                d = base.joinpath(*rel_parts[:depth])
                if d.is_dir() and d not in out:
                    out.append(d)
    return v2, v1


#: Where this process's cgroups are listed, and where the cgroup file systems are mounted.
PROC_CGROUP = Path("/proc/self/cgroup")
CGROUP_ROOT = Path("/sys/fs/cgroup")


def cgroup_room(proc_cgroup: str | Path | None = None,
                root: str | Path | None = None) -> float | None:
    """Room left under this process's cgroup memory limits (Docker's ``--memory``, systemd's
    ``MemoryMax``), the tightest of its cgroup and every ancestor: limit less usage, the
    reclaimable page cache not counted as used. v2 reads ``memory.max`` and
    ``memory.current``, v1 ``memory.limit_in_bytes`` and ``memory.usage_in_bytes``.

    Parameters
    ----------
    proc_cgroup : str or Path, optional
        The process's cgroup list (default :data:`PROC_CGROUP`).
    root : str or Path, optional
        Where the cgroup file systems are mounted (default :data:`CGROUP_ROOT`).

    Returns
    -------
    float or None
        Bytes; None where no limit is set or none can be read.
    """
    v2, v1 = _cgroup_dirs(Path(PROC_CGROUP if proc_cgroup is None else proc_cgroup),
                          Path(CGROUP_ROOT if root is None else root))
    rooms = []
    for dirs, limit_name, usage_name, cache_key, unlimited in (
            (v2, "memory.max", "memory.current", "inactive_file", math.inf),
            (v1, "memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file",
             _V1_UNLIMITED)):
        for d in dirs:
            limit = _read_number(d / limit_name)
            if limit is None or limit >= unlimited:
                continue
            usage = _read_number(d / usage_name) or 0.0
            used = max(0.0, usage - _inactive_file(d / "memory.stat", cache_key))
            rooms.append(max(0.0, limit - used))
    return min(rooms) if rooms else None


def available_bytes() -> float | None:
    """Memory this process may still take: the system's available memory, the room under a
    cgroup memory limit (:func:`cgroup_room`) and the room under an address-space limit,
    whichever is least; None where none can be read (then nothing is refused).

    Returns
    -------
    float or None
    """
    known = [v for v in (_meminfo_available(), cgroup_room(), _address_space_left())
             if v is not None]
    if not known:
        return None
    return min(known)


def _gb(b: float) -> str:
    if b >= 1e12:
        return f"{b / 1e12:.3g} TB"
    return f"{b / 1e9:.1f} GB" if b >= 1e9 else f"{b / 1e6:.0f} MB"


def check_memory(pixels: int, k: int, reference: bool,
                 available: float | None = None, isolated: bool = False,
                 advice: str = "use a smaller copy of the image") -> bool:
    """Refuse a segmentation the machine has no memory for, before anything is built.

    Parameters
    ----------
    pixels, k, reference, isolated
        As for :func:`estimate_bytes`.
    available : float, optional
        Bytes available (default :func:`available_bytes`, plus this process's resident memory,
        which the estimate already counts in :data:`BASE_BYTES`).
    advice : str
        The refusal's last words: what the user can do instead.

    Returns
    -------
    bool
        Whether an isolated reference may solve beside the solve; False: there is memory only
        for it to solve first. True where there is no isolated reference, or where the
        available memory cannot be read.

    Raises
    ------
    InsufficientMemoryError
        One sentence with the image's size, what it needs (and without the reference, where
        that would fit) and what is available.
    """
    if available is None:
        free = available_bytes()
        if free is None:
            return True
        available = free + _resident_bytes()
    if reference and isolated and estimate_bytes(pixels, k, True, True) <= available:
        return True
    need = estimate_bytes(pixels, k, reference, isolated, beside=False)
    if need <= available:
        return not (reference and isolated)
    size = (f"{pixels:.3g}-pixel" if pixels >= 1e11 else f"{pixels / 1e6:.1f}-megapixel"
            if pixels >= 100_000 else f"{pixels}-pixel")
    what = f"a {size} image with K = {k} needs about {_gb(need)}"
    if reference:
        alone = estimate_bytes(pixels, k, False)
        what += " with the reference"
        if alone <= available:
            what += f" ({_gb(alone)} without it: {WITHOUT_REFERENCE})"
    raise InsufficientMemoryError(f"{what}, but {_gb(available)} is available; {advice}")


def _status_bytes(field: str) -> float | None:
    """A size this process's ``/proc/self/status`` gives in kB (``VmSize``, ``VmRSS``), in
    bytes; None where it cannot be read."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return float(line.split()[1]) * 1024.0
    except (OSError, ValueError, IndexError):
        return None
    return None


def _resident_bytes() -> float:
    return _status_bytes("VmRSS") or 0.0
