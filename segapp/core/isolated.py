"""The reference (yardstick) solve in a child process, so that a native library that ends its
process (PyMaxflow's graph reallocation calls ``exit(1)`` when memory runs out) ends only the
child: the caller is told, and goes on without the reference.

One long-lived child serves the solves one at a time (:class:`IsolatedReference`): it is
started with ``spawn`` (never ``fork``: the app has Qt and threads), imports the solver once,
warms the yardsticks' kernels up, and is reused, so only the first reference pays its start-up
(about a second); :meth:`IsolatedReference.start` lets a caller start it early, while the model
is built. A child that died, or one that is abandoned (the caller cancelled), is replaced by a
fresh one at the next solve.

The child is sent the problem without its Laplacian, colour models and seed map, which no
yardstick reads but the Laplacian (the LP, and the constrained variants' repair on a graph that
is not the grid's own list; the child's problem makes it from the graph when first read:
30 ms at 512 × 512, about 0.2 s at 3 MP): a third of the bytes (K = 2, 3 MP: 156 MB and about
0.1 s to pickle against 502 MB and 0.3 s; docs/decisions.md, The desktop app).

Qt-free.
"""

from __future__ import annotations

import dataclasses
import importlib
import logging
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import wait
from typing import Any

log = logging.getLogger(__name__)

#: The function the child runs, ``"module:name"``, called as ``fn(problem, method)`` and
#: returning a :class:`solver.mrf.MRFResult`. Read at each solve and imported by name in the
#: child (a test swaps it for one that ends the child).
CHILD_TARGET = "solver.mrf:solve_mrf"

#: How much the child lowers its scheduling priority (``os.nice``). It solves beside ADMM: on
#: the 2-core development machine, coffee K = 3, ADMM's own time while the child solves was
#: 2.6-2.9 s at the parent's priority and 1.7-1.9 s at 10 (1.4-1.5 s alone), the run's wall time
#: the same (docs/decisions.md, The desktop app).
CHILD_NICENESS = 10

#: Seconds between looks at the caller's cancel flag while the child solves.
POLL_S = 0.05

#: How the user-facing messages name each yardstick method.
METHOD_NAMES = {"mincut": "min-cut", "expansion": "α-expansion", "lp": "LP"}


class ReferenceStopped(RuntimeError):
    """The child ended (or ran out of memory) before it answered; the message is one sentence
    for the user."""


def stopped_message(method: str, why: str) -> str:
    """The sentence a run's warnings carry when its reference could not be had."""
    name = METHOD_NAMES.get(method, method)
    return f"The {name} reference stopped: {why}; the result is shown without it"


def _exit_text(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"its process was killed ({name}, out of memory?)"
    return f"its process ended (exit status {code}, out of memory?)"


def _resolve(target: str) -> Callable[..., Any]:
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


def _warm_up() -> None:  # pragma: no cover - runs in the child
    """Import the solver and solve a tiny min-cut and α-expansion, so the kernels the
    yardsticks use are loaded (from numba's cache) while the parent builds the model, not
    during the first reference (about 0.3 s)."""
    import numpy as np

    from solver.mrf.build.problem import problem_from_unary
    from solver.mrf.solve.dispatch import solve_mrf
    rng = np.random.default_rng(0)
    for k, method in ((2, "mincut"), (3, "expansion")):
        solve_mrf(problem_from_unary(rng.random((8, 8)), rng.random((64, k))), method)


def _yield_to_parent() -> None:  # pragma: no cover - runs in the child
    """Lower the child's scheduling priority by :data:`CHILD_NICENESS` (where the system has
    ``os.nice``), so that on a busy machine ADMM, whose iterations the user watches, gets the
    cores first and the reference the rest."""
    try:
        os.nice(CHILD_NICENESS)
    except (AttributeError, OSError):
        pass


def _serve(conn) -> None:  # pragma: no cover - runs in the child
    """The child's loop: answer ``(target, problem, method)`` with ``("ok", result)`` or
    ``("error", exception)`` until the pipe closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    _yield_to_parent()
    try:
        _warm_up()
    except Exception:  # noqa: BLE001 - the first request reports what is wrong
        pass
    while True:
        try:
            target, problem, method = conn.recv()
        except (EOFError, OSError):
            return
        try:
            reply = ("ok", _resolve(target)(problem, method))
        except BaseException as exc:  # noqa: BLE001 - sent to the parent
            exc.__traceback__ = None  # (its frames would keep the problem alive)
            reply = ("error", exc)
        del problem
        try:
            conn.send(reply)
        except Exception as exc:  # noqa: BLE001 - e.g. an exception that does not pickle
            conn.send(("error", RuntimeError(f"{type(exc).__name__}: {exc}")))
        del reply
        release_memory()


def release_memory() -> bool:
    """Free what an answered solve left: collect its cycles and hand the C heap's free pages
    back to the system (glibc's ``malloc_trim``; a solve's freed arrays otherwise stay in the
    process's resident size until it ends). The child calls it after each answer, so an idle
    child holds its libraries and kernels, not its last problem's buffers.

    Returns
    -------
    bool
        Whether the heap could be trimmed (False off glibc).
    """
    import gc
    gc.collect()
    try:
        import ctypes
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        return False
    return True


class _Child:
    """One spawned child and the parent's end of its pipe."""

    def __init__(self) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.conn, theirs = ctx.Pipe()
        # daemon: multiprocessing terminates it at the interpreter's exit, whatever happens
        self.process = ctx.Process(target=_serve, args=(theirs,), name="segapp-reference",
                                   daemon=True)
        self.process.start()
        theirs.close()

    def alive(self) -> bool:
        return self.process.is_alive()

    def kill(self, close_pipe: bool = True) -> None:
        """End the child now (it may be in a native solve that never returns to Python); keep
        the pipe open where another thread may be waiting on it (it then reads the end)."""
        try:
            if self.process.is_alive():
                self.process.kill()
            self.process.join(2.0)
        except (OSError, ValueError, AssertionError):
            pass
        if close_pipe:
            try:
                self.conn.close()
            except OSError:
                pass


class IsolatedReference:
    """A long-lived child process that solves references, one at a time (thread-safe).

    Nothing starts until :meth:`start` or the first :meth:`solve`; :meth:`close` ends the child
    (a later solve starts a fresh one).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()   # guards _child
        self._busy = threading.Lock()   # one solve at a time
        self._child: _Child | None = None

    @property
    def pid(self) -> int | None:
        """The live child's process id (None when there is none)."""
        child = self._child
        return child.process.pid if child is not None and child.alive() else None

    def start(self) -> None:
        """Start the child if none is alive (returns at once; its imports go on meanwhile). A
        child that cannot be started is logged here and reported by :meth:`solve`."""
        try:
            self._ensure()
        except Exception:  # noqa: BLE001 - e.g. OSError, MemoryError, a pickling error
            log.warning("could not start the reference's process", exc_info=True)

    def _ensure(self) -> _Child:
        with self._lock:
            if self._child is None or not self._child.alive():
                if self._child is not None:
                    self._child.kill()
                self._child = _Child()
            return self._child

    def _drop(self, child: _Child) -> None:
        """Kill ``child`` and forget it if it is still the current one."""
        child.kill()
        with self._lock:
            if self._child is child:
                self._child = None

    def close(self) -> None:
        """End the child, whether idle or solving (a solve waiting on it returns or raises at
        once); used when the window closes."""
        with self._lock:
            child, self._child = self._child, None
        if child is not None:
            child.kill(close_pipe=not self._busy.locked())  # (a solve closes its own)

    def solve(self, problem, method: str,
              cancelled: Callable[[], bool] | None = None) -> Any:
        """Solve ``problem`` with yardstick ``method`` in the child.

        Parameters
        ----------
        problem : MRFProblem
        method : str
            As for :func:`solver.mrf.solve_mrf`.
        cancelled : callable, optional
            Polled every :data:`POLL_S` seconds; when it returns True the child is ended (its
            answer is no longer wanted, and a busy child would hold up the next run) and
            ``None`` is returned.

        Returns
        -------
        MRFResult or None
            None when cancelled.

        Raises
        ------
        ReferenceStopped
            The child ended before it answered, or ran out of memory; the message is the
            sentence for the user (:func:`stopped_message`).
        Exception
            What the solve raised in the child (e.g. a ValueError), as it would in-process.
        """
        with self._busy:
            return self._solve(problem, method, cancelled)

    def _solve(self, problem, method, cancelled):
        if cancelled is not None and cancelled():  # (before a child is started for nothing)
            return None
        try:
            child = self._ensure()
        except (OSError, MemoryError) as exc:
            raise ReferenceStopped(stopped_message(
                method, f"its process could not start ({type(exc).__name__}: {exc})")) from None
        slim = dataclasses.replace(problem, laplacian=None, models=(), seeds=None)
        try:
            child.conn.send((CHILD_TARGET, slim, method))
        except (OSError, EOFError, ValueError):  # the child died (or was closed) meanwhile
            if cancelled is not None and cancelled():
                self._drop(child)
                return None
            child.process.join(2.0)
            code = child.process.exitcode
            self._drop(child)
            raise ReferenceStopped(stopped_message(method, _exit_text(code))) from None
        except MemoryError:
            self._drop(child)  # it may have read part of the problem
            raise ReferenceStopped(stopped_message(
                method, "there was no memory to hand it the problem")) from None
        del slim
        while True:
            try:
                ready = wait([child.conn, child.process.sentinel], timeout=POLL_S)
            except (OSError, ValueError):  # closed from another thread
                ready = [child.process.sentinel]
            if child.conn in ready:
                try:
                    kind, payload = child.conn.recv()
                except (EOFError, OSError, ValueError):
                    ready = [child.process.sentinel]
                except MemoryError:
                    self._drop(child)
                    raise ReferenceStopped(stopped_message(
                        method, "there was no memory to take its answer")) from None
                else:
                    if kind == "ok":
                        return payload
                    if isinstance(payload, MemoryError):
                        self._drop(child)  # a fresh child for the next run
                        raise ReferenceStopped(stopped_message(method, "it ran out of memory"))
                    raise payload
            if cancelled is not None and cancelled():
                log.info("reference abandoned: the run was cancelled")
                self._drop(child)
                return None
            if child.process.sentinel in ready:
                child.process.join(2.0)
                code = child.process.exitcode
                log.warning("the reference's process ended with exit code %s", code)
                self._drop(child)
                raise ReferenceStopped(stopped_message(method, _exit_text(code)))


class PendingReference:
    """A reference solving in the child while the caller does something else (the app's ADMM):
    :meth:`IsolatedReference.solve` in a thread that only waits on the child's pipe.

    Parameters
    ----------
    runner : IsolatedReference
        The child to solve in.
    problem : MRFProblem
        Read (pickled for the child) from the thread: the caller must not change it meanwhile.
    method : str
        As for :meth:`IsolatedReference.solve`.
    cancelled : callable, optional
        The caller's cancel flag, polled as :meth:`IsolatedReference.solve` polls it.
    """

    def __init__(self, runner: IsolatedReference, problem, method: str,
                 cancelled: Callable[[], bool] | None = None) -> None:
        self._abandoned = threading.Event()
        self._done = threading.Event()
        self._result: Any = None
        self._error: BaseException | None = None
        #: Wall seconds from the start to the answer (the child's start-up, pipe and solve).
        self.time_s = 0.0

        def stop() -> bool:
            return self._abandoned.is_set() or (cancelled is not None and bool(cancelled()))

        def work() -> None:
            t0 = time.perf_counter()
            try:
                self._result = runner.solve(problem, method, cancelled=stop)
            except BaseException as exc:  # noqa: BLE001 - handed to the caller by result()
                self._error = exc
            finally:
                self.time_s = time.perf_counter() - t0
                self._done.set()

        self._thread = threading.Thread(target=work, name="segapp-reference-wait", daemon=True)
        self._thread.start()

    def done(self) -> bool:
        """Whether the answer (or the error) is in."""
        return self._done.is_set()

    def result(self) -> Any:
        """Wait for the answer: the :class:`solver.mrf.MRFResult`, or None when cancelled.

        Raises
        ------
        ReferenceStopped, Exception
            As :meth:`IsolatedReference.solve` raises them.
        """
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._result

    def abandon(self) -> None:
        """The answer is no longer wanted: end the child's solve (as a cancel does) and wait
        for the thread."""
        self._abandoned.set()
        self._thread.join()


_shared: IsolatedReference | None = None
_shared_lock = threading.Lock()


def shared() -> IsolatedReference:
    """The process-wide :class:`IsolatedReference` (made on first use)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = IsolatedReference()
        return _shared


def close_shared() -> None:
    """End the process-wide child, if any."""
    with _shared_lock:
        ref = _shared
    if ref is not None:
        ref.close()


__all__ = ["CHILD_TARGET", "IsolatedReference", "PendingReference", "ReferenceStopped",
           "close_shared", "release_memory", "shared", "stopped_message"]
