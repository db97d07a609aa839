"""The image canvas: photo, result overlay, strokes, rectangle; zoom, pan and drawing tools."""
from __future__ import annotations

import logging

import numpy as np
from PyQt6.QtCore import QPointF, QRectF, Qt, pyqtSignal
from PyQt6.QtGui import QBrush, QColor, QPainter, QPen, QPixmap, QTransform
from PyQt6.QtWidgets import (
    QGraphicsEllipseItem,
    QGraphicsPixmapItem,
    QGraphicsRectItem,
    QGraphicsScene,
    QGraphicsView,
)

from segapp.core.colouring import display_rgb, layers_rgba, palette
from segapp.model import Document
from segapp.ui.render import to_qimage

log = logging.getLogger(__name__)

TOOLS = ("brush", "eraser", "rect", "hard")
CANVAS_BG = QColor(38, 39, 43)
#: How to zoom and pan, shown as the canvas's tooltip.
NAV_HINT = "Wheel: zoom · Space-drag or middle-drag: pan · Ctrl+0: fit to window"
#: Screen pixels of the image that panning and zooming always leave in view (less for an image
#: shown smaller than that).
KEEP_VISIBLE_PX = 48.0
ZOOM_MIN, ZOOM_MAX = 1 / 32, 64.0


class Canvas(QGraphicsView):
    """Shows the document and turns mouse input into document edits.

    Signals
    -------
    cursor_moved(int, int)
        Image pixel under the cursor, ``(-1, -1)`` outside the image.
    zoom_changed(float)
        New zoom factor (1.0 = one image pixel per screen pixel).
    edited()
        A stroke or rectangle was committed.
    """

    cursor_moved = pyqtSignal(int, int)
    zoom_changed = pyqtSignal(float)
    edited = pyqtSignal()

    def __init__(self, doc: Document, parent=None) -> None:
        super().__init__(parent)
        self.doc = doc
        self.tool = "brush"
        self.label = 1
        self.brush_radius = 6.0
        self._scene = QGraphicsScene(self)
        self.setScene(self._scene)
        self.setBackgroundBrush(QBrush(CANVAS_BG))
        self.setFrameShape(QGraphicsView.Shape.NoFrame)
        # Zoom anchoring is done here (see set_zoom), not by Qt: its AnchorUnderMouse reads the
        # global cursor and the last position the base class saw, and does nothing useful once
        # the scene is smaller than the view.
        self.setTransformationAnchor(QGraphicsView.ViewportAnchor.NoAnchor)
        self.setResizeAnchor(QGraphicsView.ViewportAnchor.NoAnchor)
        self.setMouseTracking(True)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        self.setToolTip(NAV_HINT)
        self.setAcceptDrops(False)  # the main window takes drops
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.photo = QGraphicsPixmapItem()
        self.result = QGraphicsPixmapItem()
        self.compare = QGraphicsPixmapItem()
        self.layers = QGraphicsPixmapItem()
        for z, it in enumerate((self.photo, self.result, self.compare, self.layers)):
            it.setZValue(z)
            it.setTransformationMode(Qt.TransformationMode.FastTransformation)
            self._scene.addItem(it)
        self.result.setOpacity(0.55)
        self.rect_item = QGraphicsRectItem()
        pen = QPen(QColor(255, 214, 10), 0, Qt.PenStyle.DashLine)
        pen.setCosmetic(True)
        pen.setWidthF(2.0)
        self.rect_item.setPen(pen)
        self.rect_item.setZValue(10)
        self.rect_item.hide()
        self._scene.addItem(self.rect_item)
        self.cursor_item = QGraphicsEllipseItem()
        cpen = QPen(QColor(255, 255, 255, 220), 0)
        cpen.setCosmetic(True)
        self.cursor_item.setPen(cpen)
        self.cursor_item.setZValue(11)
        self.cursor_item.hide()
        self._scene.addItem(self.cursor_item)
        self._layer_img = None
        self._drag: str | None = None  # "paint" | "rect" | "pan"
        self._last: tuple[float, float] | None = None
        self._rect_start: QPointF | None = None
        self._pan_from = None
        self._space = False
        # (viewport pos, scene point, scroll x, scroll y, zoom) after the last wheel zoom: the
        # next wheel click at the same place, with nothing moved since, zooms about the same
        # scene point, so rounding to whole scroll steps does not creep over many clicks
        self._wheel_anchor: tuple | None = None
        self._vp_size = None  # the viewport's size when last laid out (see resizeEvent)
        doc.subscribe(self._on_doc)

    # ------------------------------------------------------------ document
    def _on_doc(self, kind: str, box) -> None:
        if kind == "image":
            self._load_image()
        elif kind in ("strokes", "hard"):
            self._refresh_layers(box)
        elif kind == "k":
            self._refresh_layers(None)
        elif kind == "rect":
            self._refresh_rect()

    def _load_image(self) -> None:
        img = self.doc.image
        if img is None:
            return
        self.photo.setPixmap(QPixmap.fromImage(to_qimage(display_rgb(img))))
        self._update_scene_rect()
        self.set_result(None)
        self.set_compare(None)
        self._refresh_layers(None)
        self._refresh_rect()
        self.fit_to_window()

    def _refresh_layers(self, box) -> None:
        h, w = self.doc.shape
        if h == 0:
            return
        pal = palette(self.doc.k)
        if box is None or self._layer_img is None or self._layer_img.size().height() != h:
            self._layer_img = to_qimage(layers_rgba(self.doc.strokes, self.doc.hard, pal))
        else:
            # re-draw the box plus a 1-pixel rim (outlines depend on neighbours), rendered
            # from one more ring: the rim's own outline depends on the pixels beyond it (a
            # crop ending at the rim took the rim for its own neighbour, and a hard region's
            # outline lost its pixels along the rim of a stroke's box)
            y0, y1 = max(box[0] - 1, 0), min(box[1] + 1, h)
            x0, x1 = max(box[2] - 1, 0), min(box[3] + 1, w)
            ry0, ry1, rx0, rx1 = max(y0 - 1, 0), min(y1 + 1, h), max(x0 - 1, 0), min(x1 + 1, w)
            crop = layers_rgba(self.doc.strokes[ry0:ry1, rx0:rx1],
                               self.doc.hard[ry0:ry1, rx0:rx1], pal, origin=(ry0, rx0))
            crop = crop[y0 - ry0:y1 - ry0, x0 - rx0:x1 - rx0]
            p = QPainter(self._layer_img)
            p.setCompositionMode(QPainter.CompositionMode.CompositionMode_Source)
            p.drawImage(x0, y0, to_qimage(crop))
            p.end()
        self.layers.setPixmap(QPixmap.fromImage(self._layer_img))

    def _refresh_rect(self) -> None:
        r = self.doc.rect
        if r is None:
            self.rect_item.hide()
        else:
            self.rect_item.setRect(QRectF(*r))
            self.rect_item.show()

    # ------------------------------------------------------------ overlays
    def set_result(self, rgb: np.ndarray | None) -> None:
        """Show an (H,W,3) result image over the photo (None hides it)."""
        if rgb is None:
            self.result.setPixmap(QPixmap())
            return
        pm = QPixmap.fromImage(to_qimage(rgb))
        h, w = self.doc.shape
        self.result.setScale(w / rgb.shape[1] if rgb.shape[1] else 1.0)
        self.result.setPixmap(pm)

    def set_result_opacity(self, alpha: float) -> None:
        """Opacity of the result overlay in [0, 1]."""
        self.result.setOpacity(float(alpha))

    def set_compare(self, rgba: np.ndarray | None) -> None:
        """Show an (H,W,4) disagreement layer (None hides it)."""
        self.compare.setPixmap(QPixmap() if rgba is None else QPixmap.fromImage(to_qimage(rgba)))

    def set_layers_visible(self, on: bool) -> None:
        """Show or hide strokes and hard constraints."""
        self.layers.setVisible(on)

    # ------------------------------------------------------------ zoom
    def zoom(self) -> float:
        """Current zoom factor."""
        return float(self.transform().m11())

    def view_to_scene(self, view_pos: QPointF) -> QPointF:
        """Scene coordinates of a (fractional) viewport position."""
        inv, _ = self.viewportTransform().inverted()
        return inv.map(QPointF(view_pos))

    def _update_scene_rect(self) -> None:
        """Scene rect = the image plus a margin of nearly a view on every side, at this zoom.

        So the scroll range lets any image point be brought under any viewport point (zooming
        about the cursor works at every zoom, the image smaller than the view included), yet
        always leaves at least ``KEEP_VISIBLE_PX`` screen pixels of the image in view: no zoom
        or pan can leave the view blank.
        """
        h, w = self.doc.shape
        if h == 0:
            return
        z = self.zoom()
        vp = self.viewport()
        mx = max(vp.width() - min(KEEP_VISIBLE_PX, w * z), 0.0) / z
        my = max(vp.height() - min(KEEP_VISIBLE_PX, h * z), 0.0) / z
        r = QRectF(-mx, -my, w + 2 * mx, h + 2 * my)
        if r != self.sceneRect():
            self._scene.setSceneRect(r)

    def _place(self, scene_pt: QPointF, view_pos: QPointF) -> None:
        """Scroll so ``scene_pt`` lies under ``view_pos`` (to the nearest screen pixel, as far
        as the scroll range allows)."""
        for _ in range(2):  # a scroll bar appearing or going moves the viewport's size
            d = self.viewportTransform().map(scene_pt) - QPointF(view_pos)
            hb, vb = self.horizontalScrollBar(), self.verticalScrollBar()
            hb.setValue(hb.value() + round(d.x()))
            vb.setValue(vb.value() + round(d.y()))

    def _view_centre(self) -> QPointF:
        vp = self.viewport()
        return QPointF(vp.width() / 2.0, vp.height() / 2.0)

    def set_zoom(self, z: float, anchor: QPointF | None = None) -> None:
        """Set the zoom factor (clamped to 1/32 .. 64), keeping the scene point under the
        viewport position ``anchor`` (default: the view's centre) where it is."""
        self._wheel_anchor = None
        anchor = self._view_centre() if anchor is None else QPointF(anchor)
        self._zoom_about(z, self.view_to_scene(anchor), anchor)

    def _zoom_about(self, z: float, scene_pt: QPointF, view_pos: QPointF) -> None:
        z = float(np.clip(z, ZOOM_MIN, ZOOM_MAX))
        self.setTransform(QTransform.fromScale(z, z))
        self._update_scene_rect()
        self._place(scene_pt, view_pos)
        self.zoom_changed.emit(self.zoom())

    def fit_to_window(self) -> None:
        """Zoom so the whole image fits the view, centred."""
        h, w = self.doc.shape
        if h == 0:
            return
        self._wheel_anchor = None
        centre = QPointF(w / 2.0, h / 2.0)
        for _ in range(3):  # until the viewport's size (scroll bars) settles
            vp = self.viewport().size()
            fw, fh = self._shown_viewport()
            z = max(min((fw - 4) / w, (fh - 4) / h), ZOOM_MIN)
            self.setTransform(QTransform.fromScale(z, z))
            self._update_scene_rect()
            self._place(centre, self._view_centre())
            if self.viewport().size() == vp:
                break
        self.zoom_changed.emit(self.zoom())

    def _shown_viewport(self) -> tuple[int, int]:
        """The viewport's width and height with both scroll bars shown. With an image they
        always are (the scene rect's margins make it larger than the view), but a bar that the
        image's own opening brings up is laid out on Qt's next pass, after the fit: a fit to
        the viewport of that moment left a bar's width of a new image under it."""
        vp = self.viewport().size()
        vb, hb = self.verticalScrollBar(), self.horizontalScrollBar()
        fw = vp.width() - (0 if vb.isVisibleTo(self) else vb.sizeHint().width())
        fh = vp.height() - (0 if hb.isVisibleTo(self) else hb.sizeHint().height())
        return fw, fh

    def actual_size(self) -> None:
        """One image pixel per screen pixel."""
        self.set_zoom(1.0)

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt API
        # (the view's and its viewport's resizes, a scroll bar coming or going, both come here)
        # the scene point at the centre of the view stays there
        old, centre = self._vp_size, None
        if self.doc.has_image and old is not None and not old.isEmpty():
            centre = self.view_to_scene(QPointF(old.width() / 2.0, old.height() / 2.0))
        super().resizeEvent(event)
        self._vp_size = self.viewport().size()
        if self.doc.has_image:
            self._update_scene_rect()
            if centre is not None:
                self._place(centre, self._view_centre())

    def drawForeground(self, painter, rect) -> None:  # noqa: N802 - Qt API
        if self.doc.has_image:
            return
        painter.save()
        painter.resetTransform()
        painter.setPen(QColor(150, 152, 160))
        f = painter.font()
        f.setPointSizeF(f.pointSizeF() * 1.3)
        painter.setFont(f)
        painter.drawText(self.viewport().rect(), Qt.AlignmentFlag.AlignCenter,
                         "Open a photo (Ctrl+O), drop one here,\nor pick one from the Samples menu")
        painter.restore()

    def wheelEvent(self, event) -> None:  # noqa: N802 - Qt API
        """Zoom about the scene point under the cursor: it stays under the cursor."""
        steps = event.angleDelta().y() / 120.0
        if steps and self.doc.has_image:
            pos = QPointF(event.position())
            hb, vb = self.horizontalScrollBar().value(), self.verticalScrollBar().value()
            a = self._wheel_anchor
            if a is not None and a[0] == pos and a[2:] == (hb, vb, self.zoom()):
                scene_pt = a[1]
            else:
                scene_pt = self.view_to_scene(pos)
            self._zoom_about(self.zoom() * (1.25 ** steps), scene_pt, pos)
            self._wheel_anchor = (pos, scene_pt, self.horizontalScrollBar().value(),
                                  self.verticalScrollBar().value(), self.zoom())
        event.accept()

    # ------------------------------------------------------------ tools
    def set_tool(self, tool: str) -> None:
        """Select ``"brush"``, ``"eraser"``, ``"rect"`` or ``"hard"``."""
        if tool not in TOOLS:
            raise ValueError(f"unknown tool {tool!r}")
        self.tool = tool
        self.viewport().setCursor(Qt.CursorShape.CrossCursor)
        self.cursor_item.setVisible(False)

    def set_brush_radius(self, r: float) -> None:
        """Brush radius in image pixels."""
        self.brush_radius = max(0.5, float(r))

    def image_pos(self, view_pos) -> QPointF:
        """Scene (image pixel) coordinates of a viewport position; pixel centres at integers."""
        return self.mapToScene(view_pos) - QPointF(0.5, 0.5)

    def keyPressEvent(self, event) -> None:  # noqa: N802
        if event.key() == Qt.Key.Key_Space and not event.isAutoRepeat():
            self._space = True
            self.viewport().setCursor(Qt.CursorShape.OpenHandCursor)
            return
        super().keyPressEvent(event)

    def keyReleaseEvent(self, event) -> None:  # noqa: N802
        if event.key() == Qt.Key.Key_Space and not event.isAutoRepeat():
            self._space = False
            self.viewport().setCursor(Qt.CursorShape.CrossCursor)
            return
        super().keyReleaseEvent(event)

    def mousePressEvent(self, event) -> None:  # noqa: N802
        self.setFocus()
        btn = event.button()
        if btn == Qt.MouseButton.MiddleButton or (btn == Qt.MouseButton.LeftButton and self._space):
            self._drag, self._pan_from = "pan", event.position()
            self.viewport().setCursor(Qt.CursorShape.ClosedHandCursor)
            return
        if btn != Qt.MouseButton.LeftButton or not self.doc.has_image:
            return
        p = self.image_pos(event.position().toPoint())
        if self.tool == "rect":
            self._drag, self._rect_start = "rect", p
            self.rect_item.setRect(QRectF(p, p))
            self.rect_item.show()
            return
        mode = {"brush": "strokes", "hard": "hard", "eraser": "erase"}[self.tool]
        self._drag = "paint"
        self.doc.begin_stroke(mode)
        self._last = (p.x(), p.y())
        self.doc.stroke_to(self._last, self._last, self.brush_radius, self.label)

    def mouseMoveEvent(self, event) -> None:  # noqa: N802
        pos = event.position()
        p = self.image_pos(pos.toPoint())
        h, w = self.doc.shape
        ix, iy = int(round(p.x())), int(round(p.y()))
        inside = 0 <= ix < w and 0 <= iy < h
        self.cursor_moved.emit(ix if inside else -1, iy if inside else -1)
        r = self.brush_radius
        show_cursor = self.tool != "rect" and self.doc.has_image and self._drag != "pan"
        self.cursor_item.setRect(QRectF(p.x() + 0.5 - r, p.y() + 0.5 - r, 2 * r, 2 * r))
        self.cursor_item.setVisible(show_cursor)
        if self._drag == "pan" and self._pan_from is not None:
            d = pos - self._pan_from
            self._pan_from = pos
            self.horizontalScrollBar().setValue(self.horizontalScrollBar().value() - int(d.x()))
            self.verticalScrollBar().setValue(self.verticalScrollBar().value() - int(d.y()))
        elif self._drag == "paint" and self._last is not None:
            cur = (p.x(), p.y())
            self.doc.stroke_to(self._last, cur, self.brush_radius, self.label)
            self._last = cur
        elif self._drag == "rect" and self._rect_start is not None:
            self.rect_item.setRect(QRectF(self._rect_start, p).normalized())

    def mouseReleaseEvent(self, event) -> None:  # noqa: N802
        drag, self._drag = self._drag, None
        if drag == "pan":
            self.viewport().setCursor(Qt.CursorShape.OpenHandCursor if self._space
                                      else Qt.CursorShape.CrossCursor)
        elif drag == "paint":
            self._last = None
            if self.doc.end_stroke() is not None:
                self.edited.emit()
        elif drag == "rect" and self._rect_start is not None:
            p = self.image_pos(event.position().toPoint())
            r = QRectF(self._rect_start, p).normalized()
            self._rect_start = None
            self.doc.set_rect((r.x() + 0.5, r.y() + 0.5, r.width(), r.height()))
            self._refresh_rect()
            self.edited.emit()

    def leaveEvent(self, event) -> None:  # noqa: N802
        self.cursor_item.hide()
        self.cursor_moved.emit(-1, -1)
        super().leaveEvent(event)
