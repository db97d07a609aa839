"""The desktop app's resident memory, fresh and idle after a series of runs on the cameraman.

    python benchmarks/app_memory.py [--runs 10] [--k 2] [--warm] [--no-teaching]
                                    [--code DIR[,DIR...]] [--json PATH]

Each measurement runs in a fresh process with Qt offscreen: a 1440 x 900 main window opens the
bundled cameraman (512 x 512) with its example strokes for K labels, compiles (loads) the
solver's kernels as the app does at start (``start_warm_up``) and starts the reference's child
process; the "Mass and probe" dock is shown and a pixel probed (``--no-teaching``: not). That is
the fresh start (measured once the child's size has settled). Then ``--runs`` runs, each cold (the warm start unchecked; ``--warm``: the app's
default, warm from the second run on), one after the other, and after the last one the app is
left idle for a second. Reported, in MB (10⁶ bytes): the window's process and the reference's
child (``/proc/PID/statm``) fresh, after each run and idle at the end, and the ratio of idle to
fresh (the app's own process, and both together).

``--code`` measures other copies of the repository (e.g. a copy of the code before a change),
one after the other, each in its own process.
"""

from __future__ import annotations

import argparse
import json
import logging
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

log = logging.getLogger("app_memory")

_CHILD = r"""
import gc, json, os, sys, time
os.environ["QT_QPA_PLATFORM"] = "offscreen"
runs, k, warm, teaching = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1", sys.argv[4] == "1"
PAGE = os.sysconf("SC_PAGE_SIZE")

def rss(pid="self"):
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * PAGE
    except (OSError, ValueError, IndexError):
        return 0

def main():
    from PyQt6.QtWidgets import QApplication
    app = QApplication([])
    from segapp.ui.fileops import list_samples
    from segapp.ui.main_window import MainWindow
    win = MainWindow(confirm_discard=False)
    win.resize(1440, 900)
    win.show()

    def settle(seconds):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            app.processEvents()
            time.sleep(0.01)

    def both():
        child = win.solver.reference_process.pid
        return {"app": rss(), "child": rss(child) if child else 0}

    sample = [s for s in list_samples() if s[1].stem == "cameraman" and s[3] == k][0]
    win.open_sample(sample[1], sample[2], sample[3])
    win.start_warm_up().join()
    win.solver.reference_process.start()
    if teaching:
        win.show_teaching_dock()
        h, w = win.doc.shape
        win.teaching.probe(w // 2, h // 2)
    # the child's imports and warm-up: until its size has stayed put for two seconds
    last, steady = -1, time.monotonic()
    end = time.monotonic() + 120
    while time.monotonic() < end and time.monotonic() - steady < 2.0:
        settle(0.25)
        now = both()["child"]
        if abs(now - last) > 1 << 20:
            last, steady = now, time.monotonic()
    gc.collect()
    out = {"fresh": both(), "runs": []}
    for i in range(runs):
        win.act_warm.setChecked(warm)
        if not win.start_run():
            raise SystemExit(f"run {i} did not start: {win.statusBar().currentMessage()}")
        while win.running:
            app.processEvents()
            time.sleep(0.01)
        settle(0.2)
        out["runs"].append({**both(), "iterations": int(win.outcome.iterations)})
    gc.collect()
    settle(1.0)
    out["idle"] = both()
    win.solver.shutdown()
    print("RESULT " + json.dumps(out), flush=True)

if __name__ == "__main__":
    main()
"""


def measure(code: Path, runs: int, k: int, warm: bool, teaching: bool) -> dict:
    """One measurement in a fresh process against the repository copy at ``code``.

    Returns
    -------
    dict
        ``fresh``, ``idle``: ``{"app": bytes, "child": bytes}``; ``runs``: one such dict a run,
        with its ``iterations``.
    """
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(runs), str(k), str(int(warm)),
                           str(int(teaching))], cwd=code, capture_output=True, text=True,
                          check=False)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    raise RuntimeError(f"the measurement in {code} failed (exit {proc.returncode}):\n"
                       f"{proc.stderr[-3000:]}")


def report(name: str, res: dict) -> str:
    """The table of one measurement, in MB."""
    def mb(v: dict) -> str:
        return (f"{v['app'] / 1e6:8.0f} {v['child'] / 1e6:8.0f} "
                f"{(v['app'] + v['child']) / 1e6:8.0f}")
    lines = [f"== {name}", f"{'':10s} {'app MB':>8s} {'child MB':>8s} {'both MB':>8s}",
             f"{'fresh':10s} {mb(res['fresh'])}"]
    for i, r in enumerate(res["runs"]):
        lines.append(f"{'run ' + str(i + 1):10s} {mb(r)}   ({r['iterations']} iterations)")
    lines.append(f"{'idle':10s} {mb(res['idle'])}")
    f, i = res["fresh"], res["idle"]
    lines.append(f"idle / fresh: app {i['app'] / f['app']:.2f}x, both "
                 f"{(i['app'] + i['child']) / (f['app'] + f['child']):.2f}x")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Measure and print (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--k", type=int, default=2, choices=(2, 3, 4))
    ap.add_argument("--warm", action="store_true", help="warm starts (the app's default)")
    ap.add_argument("--no-teaching", action="store_true", help="no histogram or probe")
    ap.add_argument("--code", default=str(ROOT), help="comma-separated repository copies")
    ap.add_argument("--json", help="also write the figures here")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    results = {}
    for code in args.code.split(","):
        res = measure(Path(code), args.runs, args.k, args.warm, not args.no_teaching)
        results[code] = res
        log.info("%s", report(code, res))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
