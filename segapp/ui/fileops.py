"""File handling for the main window: open, samples, recent files, sessions, exports."""
from __future__ import annotations

import csv
import logging
from pathlib import Path

from PyQt6.QtCore import QSettings
from PyQt6.QtGui import QAction
from PyQt6.QtWidgets import QFileDialog, QMenu, QMessageBox

from segapp.core.session import (apply_session, check_session_image, load_session,
                                  save_session)

log = logging.getLogger(__name__)

IMAGE_FILTER = "Images (*.png *.jpg *.jpeg *.bmp *.tif *.tiff *.webp);;All files (*)"
SESSION_FILTER = "segapp sessions (*.json)"
MAX_RECENT = 8


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
        """Ask for an image or session file and open it."""
        path, _ = QFileDialog.getOpenFileName(self, "Open image or session", self._last_dir(),
                                              f"{IMAGE_FILTER};;{SESSION_FILTER}")
        if path:
            self.open_path(path)

    def open_path(self, path: str) -> bool:
        """Open an image (or a ``.json`` session); False and an error dialog on failure."""
        if str(path).lower().endswith(".json"):
            return self.open_session(path)
        from segapp.core.io import load_image
        try:
            image = load_image(path)
        except (ValueError, OSError) as exc:
            self.error("Cannot open image", str(exc).splitlines()[0] if str(exc) else str(path))
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
            except (ValueError, OSError) as exc:
                self.error("Cannot load sample strokes", str(exc))
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
            a = m.addAction(recent_entry_text(p, recent))
            a.setToolTip(p)
            a.triggered.connect(lambda _=False, pp=p: self.open_path(pp))
        m.setEnabled(bool(self.recent_files()))

    # ---------------------------------------------------------------- sessions
    def open_session(self, path: str) -> bool:
        """Open a session JSON (image, K, rectangle, settings, strokes).

        The whole file, and its image, are read and checked before anything in the window
        changes: a bad file is one error dialog naming the field, and the current work (the
        document, settings, title, session path and last run) is left as it was."""
        from segapp.core.io import load_image
        try:
            data = load_session(path)
            if not data.image_path:
                raise ValueError("session field 'image_path': expected the path of the "
                                 "session's image, got null")
            try:
                image = load_image(data.image_path)
            except (ValueError, OSError) as exc:
                first = str(exc).splitlines()[0] if str(exc) else data.image_path
                raise ValueError(f"session field 'image_path': {first}") from exc
            check_session_image(data, image)
        except (ValueError, OSError) as exc:
            self.error("Cannot open session", str(exc).splitlines()[0] if str(exc) else path)
            return False
        if not self.maybe_save():
            return False
        self.forget_run()
        apply_session(self.doc, data, image)  # (checked above: cannot fail half-way)
        self.show_settings()
        self.results_panel.opacity.setValue(round(data.extra.get("opacity", 0.55) * 100))
        self.session_path = str(path)
        self._add_recent(str(path))
        self.update_title()
        return True

    def save_session(self, path: str | None = None) -> bool:
        """Save the session (asks for a path the first time)."""
        if not self.doc.has_image:
            return False
        path = path or self.session_path
        if not path:
            return self.save_session_as()
        try:
            save_session(path, self.doc,
                         extra={"opacity": self.results_panel.opacity.value() / 100})
        except (OSError, ValueError) as exc:
            self.error("Cannot save session", str(exc))
            return False
        self.session_path = str(path)
        self.doc.dirty = False
        self.update_title()
        self.statusBar().showMessage(f"Saved session {Path(path).name}", 5000)
        return True

    def save_session_as(self) -> bool:
        """Ask for a path and save the session."""
        default = str(Path(self.doc.image_path or "session").with_suffix(".json"))
        path, _ = QFileDialog.getSaveFileName(self, "Save session", default, SESSION_FILTER)
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

    # ---------------------------------------------------------------- exports
    def _export_path(self, title: str, suffix: str, filt: str) -> str | None:
        base = Path(self.doc.image_path or "segmentation")
        path, _ = QFileDialog.getSaveFileName(self, title, str(base.with_name(base.stem + suffix)),
                                              filt)
        return path or None

    def save_labels(self, path: str | None = None) -> bool:
        """Save the last labels as a PNG of values 1..K."""
        if self.outcome is None:
            self.error("Nothing to save", "run a segmentation first")
            return False
        path = path or self._export_path("Save labels", "_labels.png", "PNG (*.png)")
        if not path:
            return False
        from segapp.core.io import save_labels
        try:
            save_labels(path, self.outcome.labels)
        except (OSError, ValueError) as exc:
            self.error("Cannot save labels", str(exc))
            return False
        self.statusBar().showMessage(f"Saved labels to {Path(path).name}", 5000)
        return True

    def save_overlay(self, path: str | None = None) -> bool:
        """Save the photo with the labels blended over it."""
        if self.outcome is None:
            self.error("Nothing to save", "run a segmentation first")
            return False
        path = path or self._export_path("Save overlay", "_overlay.png", "PNG (*.png)")
        if not path:
            return False
        from segapp.core.io import save_overlay
        try:
            save_overlay(path, self.doc.image, self.outcome.labels,
                         alpha=self.results_panel.opacity.value() / 100)
        except (OSError, ValueError) as exc:
            self.error("Cannot save overlay", str(exc))
            return False
        self.statusBar().showMessage(f"Saved overlay to {Path(path).name}", 5000)
        return True

    def save_history(self, path: str | None = None) -> bool:
        """Save the energy history of the last run as CSV."""
        if self.outcome is None:
            self.error("Nothing to save", "run a segmentation first")
            return False
        path = path or self._export_path("Save energy history", "_history.csv", "CSV (*.csv)")
        if not path:
            return False
        # (IterationRecord names each column: energy_continuous / energy_rounded are its
        # objective / objective_rounded under the names the plot uses)
        cols = ("iteration", "energy_continuous", "energy_rounded", "residual_box",
                "residual_sphere", "rho")
        try:
            with open(path, "w", newline="") as fh:
                w = csv.writer(fh)
                w.writerow([*cols, "reference_energy"])
                ref = self.outcome.reference_energy
                for r in self.outcome.history:
                    w.writerow([getattr(r, c) for c in cols] + ["" if ref is None else ref])
        except OSError as exc:
            self.error("Cannot save history", str(exc))
            return False
        self.statusBar().showMessage(f"Saved energy history to {Path(path).name}", 5000)
        return True
