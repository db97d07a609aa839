"""File handling for the main window: open, samples, recent files and sessions, exports (labels,
colour-coded labels, overlay, cut-out, energy history), the question when the window closes,
and the autosave that a crash leaves for the next start to offer back.

Nothing a person owns is written over half-way: every export is built in memory and written
atomically, a format that would lose their labels is refused before anything is written, and
every failure is one dialog with one sentence, the document untouched.
"""
from __future__ import annotations

import csv
import io
import logging
import os
import re
from collections.abc import Callable
from pathlib import Path

import cv2
from PyQt6.QtCore import QSettings, QTimer
from PyQt6.QtGui import QAction
from PyQt6.QtWidgets import QFileDialog, QMenu, QMessageBox

from segapp.core.formats import CUTOUT_FORMATS, LABEL_FORMATS
from segapp.core.session import (SessionData, apply_session, check_session_image,
                                  load_session, save_session)

log = logging.getLogger(__name__)

IMAGE_PATTERNS = "*.png *.jpg *.jpeg *.bmp *.tif *.tiff *.webp"
IMAGE_FILTER = f"Images ({IMAGE_PATTERNS});;All files (*)"
SESSION_FILTER = "segapp sessions (*.json)"
#: The Open dialog's filters: images and sessions together first (the one it opens with).
OPEN_FILTER = (f"Images and sessions ({IMAGE_PATTERNS} *.json);;Images ({IMAGE_PATTERNS});;"
               f"{SESSION_FILTER};;All files (*)")
#: How the Recent menu marks a session among the photos.
RECENT_SESSION_MARK = " (session)"
_FORMAT_NAMES = {".png": "PNG", ".tif": "TIFF", ".tiff": "TIFF", ".jpg": "JPEG", ".jpeg": "JPEG",
                 ".webp": "WebP"}


def format_filter(exts: tuple[str, ...]) -> str:
    """A save dialog's filters for extensions, one per format: ``(".png", ".tif", ".tiff")``
    gives ``"PNG (*.png);;TIFF (*.tif *.tiff)"``."""
    groups: dict[str, list[str]] = {}
    for ext in exts:
        groups.setdefault(_FORMAT_NAMES.get(ext, ext[1:].upper()), []).append(ext)
    return ";;".join(f"{name} ({' '.join('*' + e for e in group)})"
                     for name, group in groups.items())


#: The label formats that keep values exactly (:data:`segapp.core.formats.LABEL_FORMATS`).
LABEL_FILTER = format_filter(LABEL_FORMATS)
OVERLAY_FILTER = "PNG (*.png);;JPEG (*.jpg *.jpeg)"
#: A colour-coded label image is a palette PNG.
PALETTE_LABEL_FILTER = "PNG, colour-coded (*.png)"
#: The formats with transparency (:data:`segapp.core.formats.CUTOUT_FORMATS`).
CUTOUT_FILTER = format_filter(CUTOUT_FORMATS)
CSV_FILTER = "CSV (*.csv)"
MAX_RECENT = 8
#: How long after a change the autosave is written (painting goes on undisturbed meanwhile).
AUTOSAVE_DELAY_MS = 1500
#: The errors reading or writing a file can raise (OpenCV's own among them).
FILE_ERRORS = (ValueError, OSError, cv2.error)


def error_sentence(exc: BaseException, path: str | os.PathLike[str] | None = None,
                   verb: str = "write") -> str:
    """A file error in one sentence for a dialog.

    Parameters
    ----------
    exc : BaseException
        A :data:`FILE_ERRORS` error.
    path : str or os.PathLike, optional
        The file it concerns, named where the error itself does not.
    verb : str
        ``"write"`` or ``"read"``.

    Returns
    -------
    str
        ``cannot write '/x/h.csv': No space left on device``; a ValueError's own first line.
    """
    if isinstance(exc, cv2.error):
        why = getattr(exc, "err", "") or "unknown error"
        what = "encode" if verb == "write" else "decode"
        return f"cannot {verb} '{path}': OpenCV could not {what} the image ({why})"
    if isinstance(exc, OSError) and exc.strerror:
        return f"cannot {verb} '{exc.filename or path}': {exc.strerror}"
    text = str(exc).strip()
    return text.splitlines()[0] if text else f"cannot {verb} '{path}'"


def filter_suffix(selected: str, filters: str) -> str:
    """The extension a save dialog's chosen filter names first.

    Parameters
    ----------
    selected : str
        The filter chosen in the dialog (``"TIFF (*.tif *.tiff)"``), or ``""``.
    filters : str
        All the dialog's filters, ``;;``-separated: the first one's extension is the default.

    Returns
    -------
    str
        ``".tif"``; ``""`` where the filter names no extension (``*``).
    """
    for text in (selected, filters.split(";;")[0]):
        m = re.search(r"\*(\.[A-Za-z0-9]+)", text or "")
        if m:
            return m.group(1)
    return ""


def restore_box(parent, text: str, detail: str) -> tuple[QMessageBox, object, object]:
    """The restore offer as a dialog, not yet shown.

    Parameters
    ----------
    parent : QWidget
    text : str
        The question.
    detail : str
        What the autosave holds and when it was written.

    Returns
    -------
    tuple
        ``(box, restore button, discard button)``; Restore is the default.
    """
    box = QMessageBox(QMessageBox.Icon.Question, "Restore unsaved work", text,
                      QMessageBox.StandardButton.NoButton, parent)
    box.setInformativeText(detail)
    restore = box.addButton("Restore", QMessageBox.ButtonRole.AcceptRole)
    discard = box.addButton("Discard", QMessageBox.ButtonRole.DestructiveRole)
    box.setDefaultButton(restore)
    return box, restore, discard


def ask_restore(parent, text: str, detail: str) -> str:
    """Ask whether to restore an autosave (the arguments as for :func:`restore_box`):
    ``"restore"``, ``"discard"`` or ``""`` (the dialog closed otherwise: the autosave is kept for
    the next start)."""
    box, restore, discard = restore_box(parent, text, detail)
    box.exec()
    clicked = box.clickedButton()
    box.deleteLater()
    return "restore" if clicked is restore else "discard" if clicked is discard else ""


def ask_quit_during_run(parent, unsaved: bool) -> str:
    """Ask, once, whether to quit while a segmentation runs.

    Parameters
    ----------
    parent : QWidget
    unsaved : bool
        Whether the drawing has unsaved changes: the question then offers to save them first.

    Returns
    -------
    str
        ``"save"`` (save the session, then quit), ``"discard"`` (quit without saving),
        ``"quit"`` (nothing unsaved: quit) or ``""`` (Cancel: the window and the run go on).
    """
    box = QMessageBox(QMessageBox.Icon.Question, "Quit segapp",
                      "A segmentation is running. Quit and stop it?",
                      QMessageBox.StandardButton.NoButton, parent)
    if unsaved:
        box.setInformativeText("The run is cancelled and its labels are not kept. The drawing "
                               "has unsaved changes: save them as a session before quitting?")
        save = box.addButton("&Save and Quit", QMessageBox.ButtonRole.AcceptRole)
        discard = box.addButton("&Discard and Quit", QMessageBox.ButtonRole.DestructiveRole)
        answers = {save: "save", discard: "discard"}
        box.setDefaultButton(save)
    else:
        box.setInformativeText("The run is cancelled and its labels are not kept.")
        quit_button = box.addButton("&Quit", QMessageBox.ButtonRole.AcceptRole)
        answers = {quit_button: "quit"}
        box.setDefaultButton(quit_button)
    cancel = box.addButton(QMessageBox.StandardButton.Cancel)
    box.setEscapeButton(cancel)
    box.exec()
    clicked = box.clickedButton()
    box.deleteLater()
    return answers.get(clicked, "")


def list_samples() -> list[tuple[str, Path, Path | None, int]]:
    """Bundled samples as ``(title, image, strokes or None, K)``, one per strokes file."""
    try:
        from segapp.core.io import ASSETS_DIR
    except Exception:  # noqa: BLE001 - io not importable: no samples
        return []
    out = []
    # strokes and hard-constraint layers are not samples of their own
    images = [p for p in sorted(Path(ASSETS_DIR).glob("*"))
              if p.suffix.lower() in (".png", ".jpg", ".jpeg")
              and "_strokes_k" not in p.stem and "_hard_k" not in p.stem]
    for img in images:
        strokes = sorted(Path(ASSETS_DIR).glob(f"{img.stem}_strokes_k*.png"))
        if not strokes:
            out.append((img.stem, img, None, 2))
        for s in strokes:
            k = int(s.stem.rsplit("_k", 1)[1])
            out.append((f"{img.stem} — {k} labels", img, s, k))
    return out


def list_constraint_samples() -> list[dict]:
    """The bundled samples that come with constraints (``assets/constraint_samples.json``):
    dicts with ``title``, ``image``, ``strokes``, ``hard`` (paths or None), ``k``, ``area`` and
    ``apart``."""
    import json
    try:
        from segapp.core.io import ASSETS_DIR
        entries = json.loads((Path(ASSETS_DIR) / "constraint_samples.json").read_text())
    except (ImportError, OSError, ValueError) as exc:
        log.warning("no constraint samples: %s", exc)
        return []
    out = []
    for e in entries:
        paths = {key: (Path(ASSETS_DIR) / e[key]) if e.get(key) else None
                 for key in ("image", "strokes", "hard")}
        out.append({"title": str(e["title"]), **paths, "k": int(e["k"]),
                    "area": list(e.get("area", [])), "apart": list(e.get("apart", []))})
    return out


def recent_entry_text(path: str, recent: list[str]) -> str:
    """A Recent menu entry: the file's name, and where two entries share it, also its folder
    (as many of the folder's trailing parts as it takes to tell them apart).

    Parameters
    ----------
    path : str
        The entry's full path.
    recent : list of str
        Every entry's full path.

    Returns
    -------
    str
    """
    name = Path(path).name
    twins = [Path(q) for q in recent if Path(q).name == name and q != path]
    if not twins:
        return name
    parts = tail = Path(path).parent.parts
    for depth in range(1, len(parts) + 1):
        tail = parts[-depth:]
        if all(t.parent.parts[-depth:] != tail for t in twins):
            break
    return f"{name} — {Path(*tail)}"


class FileOpsMixin:
    """Mixed into :class:`~segapp.ui.main_window.MainWindow` (needs doc, canvas, ...)."""

    session_path: str | None = None

    # ---------------------------------------------------------------- errors
    def error(self, title: str, message: str) -> None:
        """Show an error dialog and a status message; nothing the user drew is touched."""
        log.warning("%s: %s", title, message)
        self.statusBar().showMessage(f"{title}: {message}", 8000)
        QMessageBox.critical(self, title, message)

    # ---------------------------------------------------------------- open
    def open_dialog(self) -> None:
        """Ask for an image or session file (:data:`OPEN_FILTER`: both at first) and open it."""
        path, _ = QFileDialog.getOpenFileName(self, "Open image or session", self._last_dir(),
                                              OPEN_FILTER)
        if path:
            self.open_path(path)

    def open_session_dialog(self) -> bool:
        """File → Open session…: ask for a session file and open it (:meth:`open_session`).

        Returns
        -------
        bool
            Whether a session was opened.
        """
        path, _ = QFileDialog.getOpenFileName(self, "Open session", self._last_dir(),
                                              f"{SESSION_FILTER};;All files (*)")
        return self.open_session(path) if path else False

    def open_path(self, path: str) -> bool:
        """Open an image (or a ``.json`` session); False and an error dialog on failure."""
        if str(path).lower().endswith(".json"):
            return self.open_session(path)
        from segapp.core.io import load_image
        try:
            image = load_image(path)
        except FILE_ERRORS as exc:
            self.error("Cannot open image", error_sentence(exc, path, "read"))
            return False
        if not self.maybe_save():
            return False
        self.forget_run()
        self.session_path = None  # (before the image: its change sets the title)
        self.doc.set_image(image, str(path))
        self._add_recent(str(path))
        h, w = image.shape[:2]
        self.statusBar().showMessage(f"Opened {Path(path).name} ({w}×{h})", 5000)
        return True

    def open_sample(self, image: Path, strokes: Path | None, k: int, *,
                    hard: Path | None = None, area: list[str] | None = None,
                    apart: list[str] | None = None) -> bool:
        """Open a bundled sample, its example strokes and hard constraints, and set the
        constraints it comes with (none: the document's are cleared)."""
        if not self.open_path(str(image)):
            return False
        if strokes is not None:
            from segapp.core.io import load_label_image
            try:
                lab = load_label_image(str(strokes), shape=self.doc.shape, k=k)
                fixed = (None if hard is None
                         else load_label_image(str(hard), shape=self.doc.shape, k=k))
            except FILE_ERRORS as exc:
                self.error("Cannot load sample strokes", error_sentence(exc, strokes, "read"))
                return False
            self.doc._k = k  # noqa: SLF001 - fresh document, not an undoable edit
            self.doc.settings.area, self.doc.settings.apart = list(area or []), list(apart or [])
            self.doc.notify("k")
            self.doc.set_layers(strokes=lab, hard=fixed, undoable=False)
            self.doc.dirty = False
            if area or apart:
                self.side_tabs.setCurrentWidget(self.constraints_panel)
        self.update_title()
        return True

    def build_samples_menu(self, menu: QMenu) -> None:
        """Fill the Samples menu."""
        menu.clear()
        samples = list_samples()
        for title, img, strokes, k in samples:
            a = QAction(title, self)
            a.triggered.connect(lambda _=False, i=img, s=strokes, kk=k: self.open_sample(i, s, kk))
            menu.addAction(a)
        if not samples:
            menu.addAction("(no samples found)").setEnabled(False)
        constrained = list_constraint_samples()
        if constrained:
            sub = menu.addMenu("With constraints")
            for e in constrained:
                a = QAction(e["title"], self)
                a.triggered.connect(lambda _=False, e=e: self.open_sample(
                    e["image"], e["strokes"], e["k"], hard=e["hard"], area=e["area"],
                    apart=e["apart"]))
                sub.addAction(a)

    # ---------------------------------------------------------------- recent
    def _settings(self) -> QSettings:
        return QSettings("segapp", "segapp")

    def _last_dir(self) -> str:
        recent = self.recent_files()
        return str(Path(recent[0]).parent) if recent else str(Path.home())

    def recent_files(self) -> list[str]:
        """Recently opened files, newest first."""
        v = self._settings().value("recent", [])
        return [v] if isinstance(v, str) else list(v or [])

    def _add_recent(self, path: str) -> None:
        path = str(Path(path).resolve())
        rec = [p for p in self.recent_files() if p != path]
        self._settings().setValue("recent", [path] + rec[:MAX_RECENT - 1])
        self.rebuild_recent_menu()

    def rebuild_recent_menu(self) -> None:
        """Refresh the File → Recent menu."""
        m = self.recent_menu
        m.clear()
        recent = self.recent_files()
        for p in recent:
            session = p.lower().endswith(".json")  # (open_path opens it as a session)
            a = m.addAction(recent_entry_text(p, recent) + (RECENT_SESSION_MARK if session else ""))
            a.setToolTip(("Session " if session else "") + p)
            a.triggered.connect(lambda _=False, pp=p: self.open_path(pp))
        m.setEnabled(bool(self.recent_files()))

    # ---------------------------------------------------------------- sessions
    def _session_image(self, data: SessionData):
        """The image a session names, read; a failure is a ValueError naming the field."""
        from segapp.core.io import load_image
        if not data.image_path:
            raise ValueError("session field 'image_path': expected the path of the "
                             "session's image, got null")
        try:
            return load_image(data.image_path)
        except FILE_ERRORS as exc:
            raise ValueError("session field 'image_path': "
                             + error_sentence(exc, data.image_path, "read")) from exc

    def _show_session(self, data: SessionData, image, session_path: str | None) -> None:
        """Put checked session ``data`` and its ``image`` in the window (cannot fail)."""
        self.forget_run()
        apply_session(self.doc, data, image)  # (checked by the caller: cannot fail half-way)
        self.show_settings()
        self.results_panel.opacity.setValue(round(data.extra.get("opacity", 0.55) * 100))
        self.session_path = session_path
        self.update_title()

    def open_session(self, path: str) -> bool:
        """Open a session JSON (image, K, rectangle, settings, strokes).

        The whole file, and its image, are read and checked before anything in the window
        changes: a bad file is one error dialog naming the field, and the current work (the
        document, settings, title, session path and last run) is left as it was."""
        try:
            data = load_session(path)
            image = self._session_image(data)
            check_session_image(data, image)
        except FILE_ERRORS as exc:
            self.error("Cannot open session", error_sentence(exc, path, "read"))
            return False
        if not self.maybe_save():
            return False
        self._show_session(data, image, str(path))
        self._add_recent(str(path))
        self.update_title()
        return True

    def save_session(self, path: str | None = None) -> bool:
        """Save the session (asks for a path the first time); the autosave then goes, the work
        being in the session file."""
        if not self.doc.has_image:
            return False
        path = path or self.session_path
        if not path:
            return self.save_session_as()
        try:
            save_session(path, self.doc,
                         extra={"opacity": self.results_panel.opacity.value() / 100})
        except FILE_ERRORS as exc:
            self.error("Cannot save session", error_sentence(exc, path))
            return False
        self.session_path = str(path)
        self.doc.dirty = False
        self._drop_autosave()
        self._add_recent(str(path))  # (a saved session is one to come back to)
        self.update_title()
        self.statusBar().showMessage(f"Saved session {Path(path).name}", 5000)
        return True

    def save_session_as(self) -> bool:
        """Ask for a path and save the session (``.json`` added where no extension is typed)."""
        default = str(Path(self.doc.image_path or "session").with_suffix(".json"))
        path = self._ask_save_path("Save session", default, SESSION_FILTER)
        return self.save_session(path) if path else False

    def maybe_save(self) -> bool:
        """Offer to save unsaved work; False if the user cancels."""
        if not self.doc.dirty or not self.confirm_discard:
            return True
        ans = QMessageBox.question(
            self, "Unsaved changes", "Save the current session before continuing?",
            QMessageBox.StandardButton.Save | QMessageBox.StandardButton.Discard
            | QMessageBox.StandardButton.Cancel, QMessageBox.StandardButton.Save)
        if ans == QMessageBox.StandardButton.Save:
            return self.save_session()
        return ans == QMessageBox.StandardButton.Discard

    def confirm_close_during_run(self) -> bool:
        """The window is closing while a segmentation runs: ask once whether to quit and stop
        it (:func:`ask_quit_during_run`), saving the drawing first where it has unsaved changes
        and the person asks to. Without ``confirm_discard`` nothing is asked.

        Returns
        -------
        bool
            True to close (the caller then cancels the run); False keeps the window and the
            run (Cancel, or a save that was cancelled or failed).
        """
        if not self.confirm_discard:
            return True
        answer = ask_quit_during_run(self, unsaved=bool(self.doc.dirty))
        if answer == "save":
            return self.save_session()
        return answer in ("discard", "quit")

    # ---------------------------------------------------------------- save dialogs
    def _ask_save_path(self, title: str, default: str, filt: str) -> str | None:
        """A save dialog's answer; a name typed without an extension gets the chosen filter's
        (``labels`` with "PNG" chosen: ``labels.png``), and where that names a file that
        exists, replacing it is asked first (the dialog only asked about the name typed)."""
        path, chosen = QFileDialog.getSaveFileName(self, title, default, filt)
        if not path:
            return None
        if not Path(path).suffix:
            ext = filter_suffix(chosen, filt)
            if ext:
                path += ext
                if Path(path).exists() and not self._confirm_replace(path):
                    return None
        return path

    def _confirm_replace(self, path: str) -> bool:
        p = Path(path)
        ans = QMessageBox.question(
            self, "Replace file?", f"{p.name} already exists in {p.parent}. Replace it?",
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
            QMessageBox.StandardButton.No)
        return ans == QMessageBox.StandardButton.Yes

    def _export_path(self, title: str, suffix: str, filt: str) -> str | None:
        base = Path(self.doc.image_path or "segmentation")
        return self._ask_save_path(title, str(base.with_name(base.stem + suffix)), filt)

    def _check_output(self, path: str, what: str) -> None:
        """Refuse, in one sentence, an output that is a folder, a device, in a folder that
        cannot be written, or the photo or session this window has open (it would be lost)."""
        from segapp.core.paths import check_outputs
        check_outputs([(what, path)], [("image", self.doc.image_path),
                                       ("session", self.session_path)])

    # ---------------------------------------------------------------- exports
    def save_labels(self, path: str | None = None, palette: bool = False) -> bool:
        """Save the last labels (values 1..K) as PNG or TIFF; a lossy format (JPEG) is refused
        in a dialog before anything is written.

        With ``palette`` (File → Export colour-coded labels…): a palette PNG whose index is
        the label and whose colours are the app's (:func:`segapp.core.io.palette_png`), so a
        viewer shows the labels in colour and it still reads back as the same labels; any
        other format is refused."""
        if self.outcome is None:
            self.error("Nothing to save", "run a segmentation first")
            return False
        if palette:
            path = path or self._export_path("Save colour-coded labels", "_labels_colour.png",
                                             PALETTE_LABEL_FILTER)
        else:
            path = path or self._export_path("Save labels", "_labels.png", LABEL_FILTER)
        if not path:
            return False
        from segapp.core.formats import check_label_path
        from segapp.core.io import save_labels
        return self._export(
            path, "labels", lambda: save_labels(path, self.outcome.labels, palette=palette,
                                                k=self._outcome_k() if palette else None),
            "Cannot save labels", check=check_label_path,
            saved=f"Saved {'colour-coded labels' if palette else 'labels'} to {Path(path).name}")

    def save_cutout(self, path: str | None = None, labels: list[int] | None = None,
                    feather_px: float | None = None) -> bool:
        """File → Export cut-out…: the photo's own pixels where the chosen labels are, opaque,
        and transparent elsewhere (:func:`segapp.core.io.cutout`), with a soft edge of
        ``feather_px`` pixels where asked.

        Where ``labels`` is not given, a dialog (:class:`~segapp.ui.export_dialogs.CutoutDialog`)
        asks which labels to keep (label 1, the object and a rectangle's inside, at first; then
        the last choice) and the soft edge; then the save dialog, at ``<photo>_cutout.png``. A
        format without transparency (JPEG) and the open photo or session are refused in one
        sentence before anything is written.

        Returns
        -------
        bool
            Whether the cut-out was written.
        """
        if self.outcome is None:
            self.error("Nothing to export", "run a segmentation first")
            return False
        k = self._outcome_k()
        if labels is None:
            chosen = self._ask_cutout(k, feather_px)
            if chosen is None:
                return False
            labels, feather_px = chosen
        path = path or self._export_path("Save cut-out", "_cutout.png", CUTOUT_FILTER)
        if not path:
            return False
        from segapp.core.formats import check_cutout_path
        from segapp.core.io import save_cutout
        names = ", ".join(str(j) for j in labels)
        edge = f", soft edge {feather_px:g} px" if feather_px else ""
        return self._export(
            path, "cut-out", lambda: save_cutout(path, self.doc.image, self.outcome.labels,
                                                 labels, feather_px or 0.0),
            "Cannot export the cut-out", check=check_cutout_path,
            saved=f"Saved the cut-out of label{'s' if len(labels) > 1 else ''} {names}{edge} "
                  f"to {Path(path).name}")

    def _export(self, path: str, what: str, write: Callable[[], object], failed: str, *,
                check: Callable[[str], object] | None = None, saved: str | None = None) -> bool:
        """Write one export: ``check`` (the file name's format) and the output check (never the
        open photo or session, nor a folder) first, then ``write()``, which writes atomically.
        A failure is shown in a dialog titled ``failed`` in one sentence; a success in the
        status bar (``saved``, or "Saved <what> to <name>"). Returns whether it was written."""
        try:
            if check is not None:
                check(Path(path).name)
            self._check_output(path, what)
            write()
        except (*FILE_ERRORS, MemoryError) as exc:
            message = ("there is not enough memory for it" if isinstance(exc, MemoryError)
                       else error_sentence(exc, path))
            self.error(failed, message)
            return False
        self.statusBar().showMessage(saved or f"Saved {what} to {Path(path).name}", 5000)
        return True

    def _outcome_k(self) -> int:
        """The last run's K (its problem's; K may have been changed since), at least its
        largest label."""
        problem = getattr(self.outcome, "problem", None)
        k = int(getattr(problem, "k", 0) or self.doc.k)
        return max(k, int(self.outcome.labels.max()) if self.outcome.labels.size else 0)

    def _ask_cutout(self, k: int, feather_px: float | None) -> tuple[list[int], float] | None:
        """The cut-out dialog's answer, ``(labels, feather)``; None when cancelled. The last
        choice is remembered (labels beyond this K dropped)."""
        from segapp.ui.export_dialogs import DEFAULT_FEATHER_PX, CutoutDialog
        settings = self._settings()
        last = settings.value("cutout/labels", [1])
        last = [last] if isinstance(last, (str, int)) else list(last or [])
        kept = [int(v) for v in last if str(v).isdigit() and 1 <= int(v) <= k] or [1]
        if feather_px is None:
            try:
                feather_px = float(settings.value("cutout/feather", DEFAULT_FEATHER_PX))
            except (TypeError, ValueError):
                feather_px = DEFAULT_FEATHER_PX
        dialog = CutoutDialog(k, kept, feather_px, self)
        try:
            if dialog.exec() != CutoutDialog.DialogCode.Accepted or not dialog.labels():
                return None
            labels, feather = dialog.labels(), dialog.feather_px()
        finally:
            dialog.deleteLater()
        settings.setValue("cutout/labels", [str(j) for j in labels])
        settings.setValue("cutout/feather", feather)
        return labels, feather

    def save_overlay(self, path: str | None = None) -> bool:
        """Save the photo with the labels blended over it; a format this build cannot write
        is refused in a dialog before anything is written."""
        if self.outcome is None:
            self.error("Nothing to save", "run a segmentation first")
            return False
        path = path or self._export_path("Save overlay", "_overlay.png", OVERLAY_FILTER)
        if not path:
            return False
        from segapp.core.formats import check_image_path
        from segapp.core.io import save_overlay
        alpha = self.results_panel.opacity.value() / 100
        return self._export(
            path, "overlay", lambda: save_overlay(path, self.doc.image, self.outcome.labels,
                                                  alpha=alpha),
            "Cannot save overlay", check=lambda name: check_image_path(name, "overlay"))

    def save_history(self, path: str | None = None) -> bool:
        """Save the energy history of the last run as CSV, atomically (a failure leaves any
        file at ``path`` as it was, and nothing half-written)."""
        if self.outcome is None:
            self.error("Nothing to save", "run a segmentation first")
            return False
        path = path or self._export_path("Save energy history", "_history.csv", CSV_FILTER)
        if not path:
            return False
        from segapp.core.io import write_atomic
        # (IterationRecord names each column: energy_continuous / energy_rounded are its
        # objective / objective_rounded under the names the plot uses)
        cols = ("iteration", "energy_continuous", "energy_rounded", "residual_box",
                "residual_sphere", "rho")
        buf = io.StringIO()
        w = csv.writer(buf)
        w.writerow([*cols, "reference_energy"])
        ref = self.outcome.reference_energy
        for r in self.outcome.history:
            w.writerow([getattr(r, c) for c in cols] + ["" if ref is None else ref])
        return self._export(path, "energy history",
                            lambda: write_atomic(path, buf.getvalue().encode("utf-8")),
                            "Cannot save history")

    # ---------------------------------------------------------------- autosave
    _autosave = None

    def init_autosave(self, autosave: bool | str | os.PathLike[str] = True) -> None:
        """Set up the autosave (:mod:`segapp.core.autosave`): False for none, True for the
        per-user folder, or a folder."""
        from segapp.core.autosave import Autosave
        self._autosave = (None if autosave is False or autosave is None
                          else Autosave(None if autosave is True else autosave))
        self._autosave_timer = QTimer(self)
        self._autosave_timer.setSingleShot(True)
        self._autosave_timer.setInterval(AUTOSAVE_DELAY_MS)
        self._autosave_timer.timeout.connect(self._autosave_due)
        self._doc_generation = 0  # (one more for every change the document reports)
        self._autosaved_generation: int | None = None
        self._autosave_failure = ""

    @property
    def autosave_path(self) -> Path | None:
        """This window's autosave file (it need not exist); None without autosave."""
        return None if self._autosave is None else self._autosave.path

    def note_doc_change(self) -> None:
        """The document changed: autosave within :data:`AUTOSAVE_DELAY_MS` while it has unsaved
        work (the first change starts the clock, so steady painting cannot put it off); a
        clean document (saved, or a new image opened) has no autosave."""
        if self._autosave is None:
            return
        self._doc_generation += 1
        if self.doc.dirty:
            if not self._autosave_timer.isActive():
                self._autosave_timer.start()
        else:
            self._autosave_timer.stop()
            self._drop_autosave()

    def _autosave_due(self) -> None:
        if self.doc.stroking:  # (not in the middle of a brush stroke: after it)
            self._autosave_timer.start()
            return
        self.autosave_now()

    def autosave_now(self) -> bool:
        """Write the autosave now where the document has unsaved work (when a Run starts, say:
        a run is where a machine runs out of memory).

        Returns
        -------
        bool
            Whether the autosave on disk holds the document as it is. A failure to write is
            said in the status bar and logged, never a dialog; the previous autosave is kept.
        """
        if self._autosave is None:
            return False
        self._autosave_timer.stop()
        if not self.doc.dirty:
            self._drop_autosave()
            return False
        if self._autosaved_generation == self._doc_generation and self._autosave.exists:
            return True
        generation = self._doc_generation
        try:
            written = self._autosave.write(
                self.doc, extra={"opacity": self.results_panel.opacity.value() / 100},
                session_path=self.session_path)
        except FILE_ERRORS as exc:
            message = error_sentence(exc, self._autosave.path)
            if message != self._autosave_failure:
                log.warning("autosave failed: %s", message)
            self._autosave_failure = message
            self.statusBar().showMessage(f"Autosave failed: {message}", 8000)
            return False
        self._autosave_failure = ""
        if written:
            self._autosaved_generation = generation
        return written

    def _drop_autosave(self) -> None:
        """Remove this window's autosave (the work was saved, or deliberately let go)."""
        if self._autosave is not None:
            self._autosave.remove()
            self._autosaved_generation = None

    def close_autosave(self) -> None:
        """A clean close: the autosave and its lock go, and no more is written."""
        if self._autosave is not None:
            self._autosave_timer.stop()
            self._autosave.close()
            self._autosave = None

    def offer_restore(self) -> bool:
        """Offer back the unsaved work that earlier runs of segapp left when they did not close
        properly (a crash, a kill): each leftover autosave, newest first, until one is restored
        (:func:`ask_restore`). Restore reads it through the session loader; Discard removes it;
        a leftover that cannot be restored (its image gone) is said in one sentence and kept.

        Returns
        -------
        bool
            True when a leftover was restored (the document then has unsaved changes).
        """
        if self._autosave is None:
            return False
        from segapp.core.autosave import claim, find_leftovers
        for left in find_leftovers(self._autosave.folder, own=(self._autosave.path,)):
            taken = claim(left)
            if taken is None:  # (another start is offering it)
                continue
            try:
                if self._offer(taken):
                    return True
            finally:
                taken.release()
        return False

    def _offer(self, taken) -> bool:
        from segapp.core.autosave import autosave_info, describe, saved_when
        if not taken.path.is_file():  # (restored by another start meanwhile)
            return False
        try:
            data = load_session(taken.path)
        except FILE_ERRORS as exc:
            try:
                kept = taken.set_aside()
            except OSError:
                kept = taken.path
            self.error("Cannot restore unsaved work",
                       f"an autosave left by an earlier run cannot be read "
                       f"({error_sentence(exc, taken.path, 'read')}); it is kept as '{kept}'")
            return False
        name = Path(data.image_path or "the image").name
        when = saved_when(autosave_info(data).get("saved_at", taken.leftover.saved_at))
        what = describe(data)
        answer = ask_restore(
            self, f"segapp did not close properly last time. Restore the unsaved work on "
                  f"{name}?", f"{what[0].upper()}{what[1:]}. Autosaved {when}; Discard deletes it.")
        if answer == "discard":
            taken.discard()
            return False
        if answer != "restore" or not self.restore_autosave(data, str(taken.path)):
            return False
        if self.autosave_now():  # (this window's own autosave holds it now)
            taken.discard()
        return True

    def restore_autosave(self, data: SessionData, path: str) -> bool:
        """Restore autosave ``data`` (read from ``path``) into the window, marked unsaved.

        Its image is read from its path first: if it is gone or cannot be used, that is one
        error dialog, the window is left as it was and the autosave is kept.

        Returns
        -------
        bool
        """
        kept = f"the unsaved work is kept in '{path}' and offered again at the next start"
        if not data.image_path or not Path(data.image_path).is_file():
            self.error("Cannot restore unsaved work",
                       f"the image it was drawn on, '{data.image_path}', is gone; {kept}")
            return False
        from segapp.core.io import load_image
        try:
            image = load_image(data.image_path)
            check_session_image(data, image)
        except FILE_ERRORS as exc:
            self.error("Cannot restore unsaved work",
                       f"{error_sentence(exc, data.image_path, 'read')}; {kept}")
            return False
        if not self.maybe_save():
            return False
        from segapp.core.autosave import autosave_info
        self._show_session(data, image, autosave_info(data).get("session_path"))
        self.doc.dirty = True  # (restored, not saved)
        self._autosaved_generation = None
        self.update_title()
        self.statusBar().showMessage(
            f"Restored the unsaved work on {Path(data.image_path).name}", 5000)
        return True
