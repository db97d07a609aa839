"""Command line: ``segapp`` (the app), ``segapp segment``, ``segapp batch`` and ``segapp bench``
(headless).

Bad input exits with status 2 and one line ``segapp: error: ...``; nothing is written unless
everything succeeded (outputs are rendered in memory first, then written atomically).
"""

from __future__ import annotations

import argparse
import logging
import sys

from segapp.cli import batch, bench, segment

log = logging.getLogger("segapp")


class _OneLineParser(argparse.ArgumentParser):
    """Argument errors as one line (``segapp: error: ...``, exit status 2), no usage dump."""

    def error(self, message: str) -> None:  # type: ignore[override]
        print(f"segapp: error: {message} (see '{self.prog} --help')", file=sys.stderr)
        raise SystemExit(2)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``segapp`` command."""
    parser = _OneLineParser(prog="segapp", description="Interactive segmentation by "
                                     "integer programming (ℓ2-box ADMM) with a live solver view.",
                            epilog="Without a command it opens the app; 'segapp PHOTO' opens "
                                   "the app with PHOTO.")
    parser.add_argument("--demo-screenshot", metavar="OUT.png",
                        help="open the bundled sample, run ADMM, save a window screenshot, exit")
    parser.add_argument("--view", choices=("main", "geometry", "histogram"), default="main",
                        help="with --demo-screenshot: the main window (default), the Geometry "
                             "window on its first preset played to the end, or the main window "
                             "with the histogram and probe")
    parser.add_argument("-v", "--verbose", action="store_true", help="log solver progress")
    sub = parser.add_subparsers(dest="command")
    segment.add_parser(sub)
    batch.add_parser(sub)
    bench.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``segapp`` console script."""
    argv = sys.argv[1:] if argv is None else list(argv)
    # `segapp photo.jpg` opens the photo in the app
    if argv and not argv[0].startswith("-") and argv[0] not in ("segment", "batch", "bench"):
        return _app(argv[0])
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, or an argument error already reported in one line
        return int(exc.code or 0)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        if args.demo_screenshot:
            _check_screenshot_path(args.demo_screenshot)
            from segapp.ui.app import demo_screenshot  # noqa: PLC0415
            if args.view != "main":
                return demo_screenshot(args.demo_screenshot, view=args.view)
            return demo_screenshot(args.demo_screenshot)
        if args.command == "segment":
            return segment.run(args)
        if args.command == "batch":
            return batch.run(args)
        if args.command == "bench":
            return bench.run(args)
    except (ValueError, OSError, RuntimeError) as exc:
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        print(f"segapp: error: {msg}", file=sys.stderr)
        return 2
    except MemoryError:  # (an allocation the memory estimate did not foresee)
        print("segapp: error: out of memory; use a smaller copy of the image", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("segapp: error: interrupted", file=sys.stderr)
        return 130
    except SystemError as exc:
        # Ctrl-C inside a compiled (numba) kernel surfaces as "SystemError: ... returned a
        # result with an exception set", the KeyboardInterrupt in its cause or context
        if not _interrupted(exc):
            raise
        print("segapp: error: interrupted", file=sys.stderr)
        return 130
    return _app(None)


#: What ``--demo-screenshot`` can write (formats every Qt build saves).
SCREENSHOT_FORMATS = (".png", ".jpg", ".jpeg", ".bmp")


def _check_screenshot_path(path: str) -> None:
    """Refuse a screenshot path that cannot be written before the demo runs (a minute or
    more on a cold machine)."""
    from segapp.core.paths import check_output_path  # noqa: PLC0415

    check_output_path(path, "--demo-screenshot")
    ext = path[path.rfind("."):].lower() if "." in path.rsplit("/", 1)[-1] else ""
    if ext not in SCREENSHOT_FORMATS:
        raise ValueError(f"cannot write --demo-screenshot '{path}': name a "
                         f"{', '.join(SCREENSHOT_FORMATS[:-1])} or {SCREENSHOT_FORMATS[-1]} file")


def _interrupted(exc: BaseException) -> bool:
    """Whether ``exc`` or an exception in its ``__cause__`` / ``__context__`` chain is a
    KeyboardInterrupt."""
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        if isinstance(e, KeyboardInterrupt):
            return True
        seen.add(id(e))
        todo += [e.__cause__, e.__context__]
    return False


def _app(image: str | None) -> int:
    """Start the app, or say in one line which system libraries Qt would miss (exit 2)."""
    from segapp.ui.qtcheck import display_problem, install_hint, missing_packages  # noqa: PLC0415

    missing = missing_packages()
    if missing:
        print(f"segapp: error: {install_hint(missing)}", file=sys.stderr)
        return 2
    problem = display_problem()
    if problem:
        print(f"segapp: error: {problem}", file=sys.stderr)
        return 2
    from segapp.ui.app import run_app  # noqa: PLC0415
    return run_app([], image=image)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
