"""A seeded random user for the main window: types random Unicode (emoji, right-to-left
scripts, control characters) into every input, steps, goes back, forces tokens, changes the
strategy and every view's selectors, exports to a folder and opens bundles that cannot be
opened. Any exception raised in the Qt event loop is recorded through ``sys.excepthook``.

Used by ``tests/qt/test_random_gui.py`` (300 actions) and ``bench/bench_random_gui.py``
(10,000 actions, RSS before and after).
"""

from __future__ import annotations

import contextlib
import random
import sys
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path

from PySide6 import QtWidgets

from attnviz.qt.export.files import ExportError, export_view_data, render_view_to_file

ALPHABETS = (
    "我喜欢吃鱼。你好世界他们学校今天",  # CJK
    "abcXYZ 0123 .,;!?-",  # ASCII
    "مرحبا بالعالم",  # Arabic (right to left)
    "שלום עולם",  # Hebrew (right to left)
    "😀🐟🇨🇳👩‍👩‍👧🏳️‍🌈",  # emoji, flags, joiners
    "\u202e\u202d\u200b\u200d\u2066\ufeff",  # bidi overrides, zero-width characters
    "\x00\x01\x07\x1b\t\n\r\x7f",  # control characters
    "e\u0301a\u0308\u0338<>&\"'",  # combining marks, HTML characters
    "▁<b>SOS</b>EOS<unk><pad>",  # token-like text
)


def random_text(rng: random.Random, max_len: int = 40) -> str:
    n = rng.choice((0, 1, 2, 5, 12, max_len))
    return "".join(rng.choice(rng.choice(ALPHABETS)) for _ in range(n))


@contextlib.contextmanager
def recording_excepthook() -> Iterator[list[str]]:
    """Collect every exception that reaches ``sys.excepthook`` (Qt slots and virtuals report there)."""
    errors: list[str] = []
    old = sys.excepthook

    def hook(tp, value, tb):
        errors.append("".join(traceback.format_exception(tp, value, tb)))

    sys.excepthook = hook
    try:
        yield errors
    finally:
        sys.excepthook = old


class RandomUser:
    """Drives ``window`` with seeded random actions; ``run(n)`` does ``n`` of them."""

    def __init__(self, window, seed: int, out_dir: Path, bad_bundles: list[Path], wait_load: Callable[[], None]):
        self.window = window
        self.rng = random.Random(seed)
        self.out_dir = out_dir
        self.bad_bundles = bad_bundles
        self.wait_load = wait_load
        self.counts: dict[str, int] = {}
        train = window.findChild(QtWidgets.QWidget, "trainScroll")  # training is not part of the walk
        self._own = lambda w: train is None or not train.isAncestorOf(w)
        self.actions: list[tuple[str, Callable[[], None], int]] = [
            ("type source", self.type_source, 6), ("type target", self.type_target, 3), ("clear target", self.clear_target, 2),
            ("step", self.step, 10), ("back", self.back, 5), ("force", self.force, 4), ("run", self.run_to_end, 2),
            ("reset", self.window.session.reset, 2), ("combo", self.combo, 10), ("spin", self.spin, 4),
            ("line edit", self.line_edit, 4), ("button", self.button, 4), ("select", self.select, 4),
            ("example", self.example, 2), ("export", self.export, 2), ("open bad bundle", self.open_bad, 1),
            ("theme", self.theme, 1),
        ]

    def run(self, n: int) -> None:
        names = [a for a in self.actions]
        weights = [w for _, _, w in self.actions]
        for _ in range(n):
            name, action, _w = self.rng.choices(names, weights)[0]
            self.counts[name] = self.counts.get(name, 0) + 1
            action()
            QtWidgets.QApplication.processEvents()
        self.window.session.stop_run()

    # -- actions ---------------------------------------------------------------------------------
    def _widgets(self, cls):
        return [w for w in self.window.findChildren(cls) if self._own(w) and w.isEnabled()]

    def type_source(self) -> None:
        bar = self.window.input_bar
        bar.source_edit.setText(random_text(self.rng))
        bar.source_edit.returnPressed.emit()

    def type_target(self) -> None:
        bar = self.window.input_bar
        bar.target_edit.setText(random_text(self.rng, 20))
        bar.target_edit.returnPressed.emit()

    def clear_target(self) -> None:
        self.window.input_bar.target_edit.clear()
        self.window.input_bar.target_edit.returnPressed.emit()

    def step(self) -> None:
        self.window.session.step()

    def back(self) -> None:
        self.window.session.back()

    def force(self) -> None:
        topk = self.window.session.frames.next_topk()
        if topk:
            self.window.session.force(int(self.rng.choice(topk)[1]))

    def run_to_end(self) -> None:
        s = self.window.session
        s.run_to_end()
        for _ in range(self.rng.randint(0, 30)):
            if not s.running:
                break
            QtWidgets.QApplication.processEvents()
        s.stop_run()

    def combo(self) -> None:
        combos = [c for c in self._widgets(QtWidgets.QComboBox) if c.count()]
        if combos:
            c = self.rng.choice(combos)
            i = self.rng.randrange(c.count())
            c.setCurrentIndex(i)
            c.activated.emit(i)

    def spin(self) -> None:
        spins = self._widgets(QtWidgets.QAbstractSpinBox)
        if spins:
            w = self.rng.choice(spins)
            if isinstance(w, (QtWidgets.QSpinBox, QtWidgets.QDoubleSpinBox)):
                w.setValue(self.rng.uniform(w.minimum() - 5, w.maximum() + 5))

    def line_edit(self) -> None:
        edits = [e for e in self._widgets(QtWidgets.QLineEdit) if not e.isReadOnly() and e.objectName() not in ("sourceEdit", "targetEdit")]
        if edits:
            e = self.rng.choice(edits)
            e.setText(self.rng.choice((random_text(self.rng), "0-999999999", "3, 1-4, x", "9" * 300)))
            e.editingFinished.emit()

    def button(self) -> None:
        w = self.window
        dialogs = (w.acts.open, w.acts.export_figure, w.acts.export_data, w.acts.export_all, w.acts.export_animation, w.acts.export_page,
                   w.acts.quit, w.acts.about, w.acts.keys)
        opens_dialog = {"cancelLoadButton", "checkpointChooseButton", "normBatchBrowseButton"}  # a folder dialog would wait for a person
        buttons = [b for b in self._widgets(QtWidgets.QAbstractButton) if b.isVisible() and b.objectName() not in opens_dialog
                   and not (isinstance(b, QtWidgets.QToolButton) and b.defaultAction() in dialogs)]  # no modal dialogs
        if buttons:
            self.rng.choice(buttons).click()

    def select(self) -> None:
        """Move the linked selection, as a choice in any view does (a layer or head past the model's: the views clamp)."""
        kind = self.rng.choice(("encoder", "decoder", "cross"))
        self.window.views.selection.update(kind=kind, layer=self.rng.randint(0, 5), head=self.rng.randint(0, 9), mode="head")

    def example(self) -> None:
        combo = self.window.input_bar.example_combo
        if combo.count() > 1:
            i = self.rng.randrange(1, combo.count())
            combo.setCurrentIndex(i)
            combo.activated.emit(i)

    def export(self) -> None:
        view = self.rng.choice(self.window.views.all())
        fmt = self.rng.choice(("png", "svg", "csv", "npz"))
        path = self.out_dir / f"{view.objectName() or 'view'}.{fmt}"
        try:
            if fmt in ("csv", "npz"):
                export_view_data(view, path)
            else:
                render_view_to_file(view, path, width=self.rng.choice((None, 200)))
        except ExportError:
            pass  # a view with nothing to draw says so

    def open_bad(self) -> None:
        if self.bad_bundles:
            self.window.open_model(self.rng.choice(self.bad_bundles))
            self.wait_load()

    def theme(self) -> None:
        w = self.window
        w.set_theme(self.rng.choice(("light", "dark")))
        w.set_colormap(self.rng.choice([a.data() for a in w.menus.cmap_group.actions()]))


def rss_mb() -> float:
    """This process's resident memory in MiB (Linux; 0 elsewhere)."""
    try:
        with open("/proc/self/statm") as fh:
            pages = int(fh.read().split()[1])
    except OSError:
        return 0.0
    import os

    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


