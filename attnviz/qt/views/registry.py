"""The panels that show the rest of the inside: positional encoding, norm statistics, the output
distribution, the one-head walkthrough and training. Built here, fed from the session."""

from __future__ import annotations

from pathlib import Path

from PySide6 import QtWidgets

from attnviz.core.analysis.norms import norm_site_data_for
from attnviz.core.analysis.positional import positional_data_for
from attnviz.qt.session import Session
from attnviz.qt.train.panel import TrainPanel
from attnviz.qt.views.norm_stats import QtNormStatsView
from attnviz.qt.views.output import QtOutputView
from attnviz.qt.views.positional import QtPositionalView
from attnviz.qt.views.walkthrough import QtWalkthroughView


def walkthrough_for(session: Session, kind: str, layer: int, head: int, query: int | None):
    """The one-head walkthrough of the session's current decoding (falls back to the encoder
    before the first decoder step)."""
    from attnviz.core.analysis.walkthrough import session_walkthrough

    cur = session.current
    if cur is None:
        return None
    if kind != "encoder" and session.n_rows() == 0:
        kind = "encoder"
    n_layers = session.n_layers(kind)
    layer = max(0, min(layer, n_layers - 1))
    head = max(0, min(head, session.bundle.config.n_heads - 1))
    rows = len(cur.src_pieces) if kind == "encoder" else session.n_rows()
    if query is None or not 0 <= query < rows:
        query = rows - 1 if kind == "encoder" else (session.current_row() or 0)
    return session_walkthrough(session.bundle.model, cur, kind, layer, head, query)


def walkthrough_layers(session: Session) -> dict[str, int]:
    return {k: session.n_layers(k) for k in ("encoder", "decoder", "cross")}


def make_inside_view(name: str, session: Session, *, layer: int = 0, head: int = 0, theme: str = "light", kind: str = "cross"):
    """A view of this module with the session's data, for ``attnviz export``."""
    from attnviz.errors import CommandError

    cur = session.current
    cfg = session.bundle.config
    if name == "pe":
        view = QtPositionalView(theme=theme)
        view.set_data(positional_data_for(cur))
    elif name == "norm":
        view = QtNormStatsView(theme=theme)
        view.set_data(norm_site_data_for(cur, cfg), cfg.norm, cfg.norm_placement)
        view.select("encoder" if kind == "encoder" else "decoder", layer)
    elif name == "output":
        view = QtOutputView(theme=theme)
        view.set_data(step=session.current_step(), forced=session.forced, position=session.forced_cursor if session.forced else None)
    elif name == "walkthrough":
        view = QtWalkthroughView(theme=theme)
        walk = walkthrough_for(session, kind, layer, head, None)
        if walk is None:
            raise CommandError("nothing to walk through")
        view.set_data(walk, walkthrough_layers(session))
    else:
        raise CommandError(f"unknown view {name!r}")
    return view


class InsidePanels:
    """Owns the five panels and keeps them in step with the session."""

    def __init__(self, window: QtWidgets.QMainWindow, session: Session):
        self.window = window
        self.session = session
        self.positional = QtPositionalView()
        self.norm_stats = QtNormStatsView()
        self.output = QtOutputView()
        self.walkthrough = QtWalkthroughView()
        self.train = TrainPanel()
        self._walk_sel = ("cross", 0, 0, None)
        self.walkthrough.selectionRequested.connect(self._on_walkthrough_selection)
        self.output.positionClicked.connect(self._on_position_clicked)
        self.train.bundleReady.connect(lambda path: window.open_model(Path(path)))
        self._train_scroll = QtWidgets.QScrollArea(objectName="trainScroll")  # the panel is tall; the dock need not be
        self._train_scroll.setWidget(self.train)
        self._train_scroll.setWidgetResizable(True)
        self._train_scroll.setFrameShape(QtWidgets.QFrame.Shape.NoFrame)

    def views(self) -> list[tuple[str, QtWidgets.QWidget, str]]:
        return [
            ("Output distribution", self.output, "outputDock"),
            ("Positional encoding", self.positional, "positionalDock"),
            ("LayerNorm / BatchNorm", self.norm_stats, "normStatsDock"),
            ("One-head walkthrough", self.walkthrough, "walkthroughDock"),
            ("Train", self._train_scroll, "trainDock"),
        ]

    def refresh(self, view: QtWidgets.QWidget) -> None:
        s = self.session
        cur = s.current
        if cur is None or s.bundle is None:
            return
        cfg = s.bundle.config
        if view is self.positional:
            self.positional.set_data(positional_data_for(cur))
        elif view is self.norm_stats:
            self.norm_stats.set_data(norm_site_data_for(cur, cfg), cfg.norm, cfg.norm_placement)
        elif view is self.output:
            self.output.set_data(step=s.current_step(), forced=s.forced, position=s.forced_cursor if s.forced else None)
        elif view is self.walkthrough:
            kind, layer, head, query = self._walk_sel
            walk = walkthrough_for(s, kind, layer, head, query)
            if walk is not None:
                self.walkthrough.set_data(walk, walkthrough_layers(s))

    def _on_walkthrough_selection(self, kind: str, layer: int, head: int, query: int) -> None:
        self._walk_sel = (kind, layer, head, query)
        self.refresh(self.walkthrough)

    def _on_position_clicked(self, position: int) -> None:
        s = self.session
        if s.forced is not None and 0 <= position < len(s.forced.positions):
            s.forced_cursor = position
            s.decodingChanged.emit()

    def confirm_close(self, parent: QtWidgets.QWidget) -> bool:
        if not self.train.is_running():
            return True
        answer = QtWidgets.QMessageBox.question(
            parent, "Training in progress",
            "A training run is in progress. Stop it and quit? The last finished epoch's checkpoint is kept.",
            QtWidgets.QMessageBox.StandardButton.Yes | QtWidgets.QMessageBox.StandardButton.No,
            QtWidgets.QMessageBox.StandardButton.No,
        )
        return answer == QtWidgets.QMessageBox.StandardButton.Yes

    def shutdown(self) -> None:
        self.train.shutdown(30)
