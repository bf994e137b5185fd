"""The real main window for tests and benchmarks: opened on the bundled model with its first
example decoded, settings in a temporary file; and small bundles that cannot be opened."""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from PySide6 import QtCore, QtGui, QtWidgets

from attnviz.paths import default_model
from attnviz.qt.main_window import MainWindow

TIMEOUT_MS = 30000


def open_window(qtbot, tmp_path: Path, size: tuple[int, int] = (1400, 900)) -> MainWindow:
    """A shown main window of ``size`` on the bundled model, its first sentence decoded to the end."""
    settings = QtCore.QSettings(str(tmp_path / "settings.ini"), QtCore.QSettings.Format.IniFormat)
    w = MainWindow(settings=settings)
    qtbot.addWidget(w)
    w.resize(*size)
    w.show()
    qtbot.waitUntil(lambda: w.session.bundle is not None, timeout=TIMEOUT_MS)
    qtbot.waitUntil(lambda: w.session.decoding is not None and w.session.decoding.finished, timeout=TIMEOUT_MS)
    wait_idle(qtbot, w)
    return w


def wait_until(predicate, timeout_ms: int = TIMEOUT_MS) -> None:
    """``qtbot.waitUntil`` for fixtures wider than a test (``qtbot`` is one test's)."""
    from PySide6 import QtTest

    deadline = time.monotonic() + timeout_ms / 1000
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"not true within {timeout_ms} ms: {predicate}")
        QtTest.QTest.qWait(10)


def open_shared_window(folder: Path, size: tuple[int, int] = (1400, 900), **kw) -> MainWindow:
    """:func:`open_window` for a module-scoped fixture: the same window (``kw`` go to
    :class:`MainWindow`), not registered with a test's ``qtbot``; close it with
    :func:`close_shared_window`."""
    settings = QtCore.QSettings(str(folder / "settings.ini"), QtCore.QSettings.Format.IniFormat)
    w = MainWindow(settings=settings, **kw)
    w.resize(*size)
    w.show()
    wait_until(lambda: w.session.bundle is not None)
    wait_until(lambda: w.session.decoding is not None and w.session.decoding.finished)
    wait_until(lambda: not w.session.running and not w.session.loading)
    QtWidgets.QApplication.processEvents()
    return w


def close_shared_window(window: MainWindow) -> None:
    close_window(window)
    window.close()
    window.deleteLater()
    QtWidgets.QApplication.processEvents()


def wait_idle(qtbot, window: MainWindow) -> None:
    """Until no run to the end, no model load, no pass the session waits for (a target's teacher-forced
    pass, a plan), no reading of a model's examples (it starts a moment after the model opens, and
    may put its first example in) and no view's analysis is in progress."""
    s = window.session
    qtbot.waitUntil(lambda: not s.running and not s.loading and not s.pending and not window.input_bar.hints_pending(),
                    timeout=TIMEOUT_MS)
    assert window.session.analyses.wait(TIMEOUT_MS / 1000)
    QtWidgets.QApplication.processEvents()


def close_window(window: MainWindow) -> None:
    window.session.stop_run()
    window.session.wait_for_workers(5000)


def copy_bundle(dest: Path, source: Path | None = None) -> Path:
    """A copy of a bundle (the bundled model by default) at ``dest``."""
    shutil.copytree(source or default_model(), dest)
    return dest


def broken_config_bundle(dest: Path, **config) -> Path:
    """A copy of the bundled model whose config.json has ``config`` written over it."""
    copy_bundle(dest)
    path = dest / "config.json"
    cfg = json.loads(path.read_text(encoding="utf-8"))
    cfg.update(config)
    path.write_text(json.dumps(cfg), encoding="utf-8")
    return dest


# -- the layout check: no two texts of a view overlap, none is cut off ------------------------------
SLACK = 2.0  # px: boxes that touch or share a pixel or two of leading do not count


@dataclass(frozen=True)
class TextBox:
    """A text on screen: its owner (a view or widget's objectName), the text, and its box in
    window coordinates."""

    owner: str
    text: str
    rect: QtCore.QRectF


def owner_name(widget: QtWidgets.QWidget) -> str:
    """The objectName of the view holding ``widget``, else of ``widget`` or its nearest named
    ancestor."""
    w = widget
    while w is not None and not hasattr(w, "figure_data"):
        w = w.parentWidget()
    if w is not None and w.objectName():
        return w.objectName()
    w = widget
    while w is not None and not w.objectName():
        w = w.parentWidget()
    return w.objectName() if w is not None else type(widget).__name__


def window_rect(widget: QtWidgets.QWidget, window: QtWidgets.QWidget) -> QtCore.QRectF:
    return QtCore.QRectF(widget.rect()).translated(QtCore.QPointF(widget.mapTo(window, QtCore.QPoint(0, 0))))


def visible_rect(widget: QtWidgets.QWidget, window: QtWidgets.QWidget) -> QtCore.QRectF:
    """The part of ``widget`` not cut off by its ancestors (docks, the window), in window
    coordinates. Inside a scroll area, the area's contents count as readable (they scroll), so
    the ancestors from the scroll area up do not cut them."""
    rect = window_rect(widget, window)
    w = widget.parentWidget()
    while w is not None and w is not window.parentWidget():
        if isinstance(w.parentWidget(), QtWidgets.QAbstractScrollArea) and w is w.parentWidget().viewport():
            return rect
        rect &= window_rect(w, window)
        w = w.parentWidget()
    return rect


def shown(widget: QtWidgets.QWidget, window: QtWidgets.QWidget) -> bool:
    """Some of ``widget`` is on screen now: not in a hidden dock tab, not scrolled away."""
    rect = window_rect(widget, window)
    w = widget.parentWidget()
    while w is not None and w is not window.parentWidget():
        rect &= window_rect(w, window)
        w = w.parentWidget()
    return not rect.isEmpty()


def _item_text(item: QtWidgets.QGraphicsItem) -> tuple[str, QtCore.QRectF] | None:
    """Text and tight box (item coordinates) of a text item, or ``None``."""
    if isinstance(item, QtWidgets.QGraphicsTextItem):
        text = item.toPlainText().strip()
        m = item.document().documentMargin()
        return (text, item.boundingRect().adjusted(m, m, -m, -m)) if text else None
    if isinstance(item, QtWidgets.QGraphicsSimpleTextItem):
        text = item.text().strip()
        return (text, item.boundingRect()) if text else None
    return None


def scene_texts(view: QtWidgets.QGraphicsView, window: QtWidgets.QWidget) -> list[TextBox]:
    """Every visible text of ``view``'s scene (text items, pyqtgraph's TextItem and LabelItem, axis
    labels, axis tick labels, the token labels an item paints itself and lists in ``label_boxes``)
    with its box in window coordinates."""
    import pyqtgraph as pg

    boxes: list[tuple[str, QtCore.QRectF]] = []
    image = QtGui.QImage(8, 8, QtGui.QImage.Format.Format_ARGB32)
    painter = QtGui.QPainter(image)
    try:
        for item in view.scene().items():
            if not item.isVisible() or item.effectiveOpacity() < 0.05:
                continue
            found = _item_text(item)
            if found is not None:
                boxes.append((found[0], item.mapRectToScene(found[1])))
            elif hasattr(item, "label_boxes"):  # token axes and the line view paint their labels
                boxes.extend(item.label_boxes())
            elif isinstance(item, pg.AxisItem) and item.style.get("showValues", True):
                for rect, _flags, text in item.generateDrawSpecs(painter)[2]:
                    if str(text).strip():
                        boxes.append((str(text), item.mapRectToScene(rect)))
    finally:
        painter.end()
    owner, viewport = owner_name(view), view.viewport()
    origin = QtCore.QPointF(viewport.mapTo(window, QtCore.QPoint(0, 0)))
    return [TextBox(owner, text, QtCore.QRectF(view.mapFromScene(rect).boundingRect()).translated(origin)) for text, rect in boxes]


def _overlap(a: QtCore.QRectF, b: QtCore.QRectF) -> bool:
    both = a & b
    return both.width() > SLACK and both.height() > SLACK


def _inside(rect: QtCore.QRectF, room: QtCore.QRectF) -> bool:
    return room.adjusted(-SLACK, -SLACK, SLACK, SLACK).contains(rect)


def check_texts(boxes: list[TextBox], room: QtCore.QRectF) -> list[str]:
    """Problems among ``boxes`` of one view: pairs that overlap, and texts cut off by ``room``."""
    problems = [f"{b.owner}: {b.text!r} is cut off" for b in boxes if not _inside(b.rect, room)]
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            if _overlap(a.rect, b.rect):
                problems.append(f"{a.owner}: {a.text!r} overlaps {b.text!r}")
    return problems


def label_fits(label: QtWidgets.QLabel) -> bool:
    """The label's text fits its box (wrapped labels: in height; others: in width)."""
    room = label.contentsRect()
    if label.wordWrap():
        return label.heightForWidth(label.width()) <= label.height() + SLACK or label.height() >= label.sizeHint().height()
    if label.textFormat() == QtCore.Qt.TextFormat.PlainText or not QtGui.Qt.mightBeRichText(label.text()):
        return label.fontMetrics().horizontalAdvance(label.text()) <= room.width() + SLACK
    return label.sizeHint().width() <= label.width() + SLACK


def widget_problems(window: QtWidgets.QWidget) -> list[str]:
    """The window's own labels: each fits its box, is not cut off by its ancestors, and does
    not overlap another label."""
    labels = [lab for lab in window.findChildren(QtWidgets.QLabel) if lab.isVisible() and lab.text().strip()
              and lab.window() is window and shown(lab, window)]
    problems, boxes = [], []
    for lab in labels:
        seen, whole = visible_rect(lab, window), window_rect(lab, window)
        if not label_fits(lab):
            problems.append(f"{owner_name(lab)}: label {lab.text()[:40]!r} does not fit its {lab.width()}x{lab.height()} box")
        elif not _inside(whole, seen):
            problems.append(f"{owner_name(lab)}: label {lab.text()[:40]!r} is cut off")
        boxes.append((lab, whole))
    for i, (a, ra) in enumerate(boxes):
        for b, rb in boxes[i + 1:]:
            if not (a.isAncestorOf(b) or b.isAncestorOf(a)) and _overlap(ra, rb):
                problems.append(f"{owner_name(a)}: label {a.text()[:30]!r} overlaps {b.text()[:30]!r}")
    return problems


def layout_problems(window: QtWidgets.QWidget) -> dict[str, list[str]]:
    """Problems of every visible view (by owner) and of the window's labels (under "labels")."""
    out: dict[str, list[str]] = {}
    for view in window.findChildren(QtWidgets.QGraphicsView):
        room = visible_rect(view.viewport(), window)
        if view.isVisible() and view.scene() is not None and view.window() is window and shown(view, window):
            found = check_texts(scene_texts(view, window), room)
            if found:
                out.setdefault(owner_name(view), []).extend(found)
    labels = widget_problems(window)
    if labels:
        out["labels"] = labels
    return out
