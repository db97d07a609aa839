"""The convergence plot's lines and axes once their view box is gone: the geometry Qt asks
for is empty, not an exception raised inside Qt's call (which ended the test process, a worker
at a time, while closed windows' plots were torn down: pyqtgraph's InfiniteLine read
``getViewBox().size()`` of None, its AxisItem the geometry of a deleted view box)."""
from __future__ import annotations

import weakref

import pyqtgraph as pg
import pytest
from PyQt6 import sip
from PyQt6.QtCore import QRectF

from segapp.ui.plot import EnergyPlot


@pytest.fixture
def plot(qtbot):
    """A plot that is never shown (as a closed window's): nothing paints it."""
    p = EnergyPlot()
    p.resize(400, 300)
    p.set_reference(-100.0)
    yield p
    p.deleteLater()


class _Gone:
    pass


def detached(line):
    """``line`` whose view box's Python side is gone (its cached weak reference dead, as after
    the box was collected), its cached geometry dropped."""
    gone = _Gone()
    line._viewBox = weakref.ref(gone)
    del gone
    line._boundingRect = None
    return line


def test_a_line_without_its_view_box_has_no_geometry(plot):
    bare = pg.InfiniteLine(angle=0)  # pyqtgraph's own, for the premise
    plot.energy.addItem(bare)
    assert not plot.ref_line.boundingRect().isNull() and not bare.boundingRect().isNull()
    with pytest.raises(AttributeError):
        detached(bare).boundingRect()
    assert detached(plot.ref_line).boundingRect() == QRectF()
    assert detached(plot.marker).boundingRect() == QRectF()


def test_an_axis_without_its_view_box_has_no_geometry(plot):
    item = plot.energy.getPlotItem()
    axis = item.getAxis("bottom")
    bare = pg.AxisItem("bottom")
    bare.setGrid(40)  # (as the plots' grids set their axes)
    bare.linkToView(item.getViewBox())
    assert axis.grid is not False  # the premise: the axis measures itself by its view box
    assert not axis.boundingRect().isNull() and not bare.boundingRect().isNull()
    sip.delete(item.getViewBox())
    with pytest.raises(RuntimeError):
        bare.boundingRect()
    assert axis.boundingRect() == QRectF()


def test_the_plots_show_their_left_and_bottom_axes_only(qtbot):
    p = EnergyPlot()
    qtbot.addWidget(p)
    p.show()
    qtbot.waitExposed(p)
    for widget in (p.energy, p.resid):
        item = widget.getPlotItem()
        shown = {side for side in ("left", "bottom", "top", "right")
                 if item.getAxis(side).isVisible()}
        assert shown == {"left", "bottom"}
