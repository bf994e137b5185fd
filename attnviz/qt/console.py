"""View → Python Console: an IPython console in a dock of the live window, its kernel in this
process (qtconsole's ``QtInProcessKernelManager`` and ``RichJupyterWidget``; the optional extra
``pip install 'attnviz[console]'``).

Its namespace holds the window's objects — ``session`` (the :class:`~attnviz.qt.session.Session`),
``window``, ``bundle`` and ``model`` (the open bundle and its model, kept up to date when another
model is opened), ``views`` (the :class:`~attnviz.qt.views.registry.ViewSet`, ``views["grid"]``),
``selection`` (the linked selection) — and helpers: ``trace(src, tgt=None)`` (a decoding result of
the open model: ``.accumulated(name)`` for every trace name, ``.all_attention(kind)``),
``ablate("cross:3:2", ...)`` and ``analysis`` (the package :mod:`attnviz.core.analysis`). What a
script changes through the session's setters (``session.set_inputs("我爱你。", "")``,
``session.set_ablation(...)``, ``session.go_to(3)``) shows in the views as a user's change does.
Code typed in the console runs in the UI thread: a long loop holds the window until it ends.
"""

from __future__ import annotations

import importlib.util
import os
from typing import Any

from PySide6 import QtCore, QtGui, QtWidgets

from attnviz.qt.i18n import translate

INSTALL_HINT = "pip install 'attnviz[console]'"
DOCK_NAME = "pythonConsoleDock"
BANNER = ("attnviz console: session, window, bundle, model, views, selection; trace(src, tgt=None), "
          "ablate('cross:3:2', ...), analysis (attnviz.core.analysis)\n")


def console_available() -> bool:
    """qtconsole and ipykernel are installed."""
    return all(importlib.util.find_spec(name) is not None for name in ("qtconsole", "ipykernel"))


def trace(session: Any, src: str, tgt: str | None = None, names: Any = None) -> Any:
    """The open model on ``src``: teacher-forced on ``tgt``, or decoded greedily to the end; a
    decoding result (``.accumulated(name)`` gives any trace name over all rows, ``.all_attention(kind)``
    ``[layer, head, query, key]``). The window's own sentence is left as it is."""
    from attnviz.core.decoding.session import DecodingSession
    from attnviz.core.decoding.teacher_forcing import teacher_forced_from_bundle

    bundle = session.bundle
    if bundle is None:
        raise RuntimeError("no model is open")
    if tgt is not None:
        return teacher_forced_from_bundle(bundle, src, tgt, names=names)
    result = DecodingSession.from_bundle(bundle, src)
    result.run()
    return result.frozen()


def ablate(session: Any, *heads: str, how: str = "zero") -> None:
    """Ablate ``heads`` (``"cross:3:2"``: kind, layer and head 1-based, as on screen) in every run of
    the window from now on, ``how`` ``"zero"``, ``"mean"`` or ``"uniform"``; no heads: none
    (``session.ablation`` holds the set)."""
    from attnviz.core.analysis.ablation import HeadSet

    session.set_ablation(HeadSet.parse(",".join(heads), how))


def namespace(window: Any) -> dict[str, Any]:
    """What the console's code sees: the window's objects and the helpers."""
    import attnviz.core.analysis as analysis

    session = window.session
    bundle = session.bundle
    return {"session": session, "window": window, "bundle": bundle, "model": bundle.model if bundle is not None else None,
            "views": window.views, "selection": window.views.selection, "analysis": analysis,
            "trace": lambda src, tgt=None, names=None: trace(session, src, tgt, names),
            "ablate": lambda *heads, how="zero": ablate(session, *heads, how=how)}


class PythonConsole(QtCore.QObject):
    """The console's kernel and widget, in a dock of ``window`` (built on first use, kept; its
    kernel shut down when the application quits)."""

    def __init__(self, window: QtWidgets.QMainWindow):
        super().__init__(window)
        os.environ.setdefault("QT_API", "pyside6")  # qtconsole's Qt binding: the app's
        from qtconsole.inprocess import QtInProcessKernelManager
        from qtconsole.rich_jupyter_widget import RichJupyterWidget

        self.window = window
        self.kernel_manager = QtInProcessKernelManager()
        self.kernel_manager.start_kernel(show_banner=False)
        self.kernel_manager.kernel.gui = "qt"
        self.kernel_client = self.kernel_manager.client()
        self.kernel_client.start_channels()
        self.widget = RichJupyterWidget(banner=BANNER)
        self.widget.setObjectName("pythonConsole")
        self.widget.kernel_manager, self.widget.kernel_client = self.kernel_manager, self.kernel_client
        self.kernel_manager.kernel.shell.push(namespace(window))
        self.dock = QtWidgets.QDockWidget(translate("console", "Python console"), window)
        self.dock.setObjectName(DOCK_NAME)
        self.dock.setWidget(self.widget)
        window.addDockWidget(QtCore.Qt.DockWidgetArea.BottomDockWidgetArea, self.dock)
        window.session.modelChanged.connect(self._on_model_changed)
        QtWidgets.QApplication.instance().aboutToQuit.connect(self.shutdown)

    def _on_model_changed(self, bundle: Any) -> None:
        self.kernel_manager.kernel.shell.push({"bundle": bundle, "model": bundle.model if bundle is not None else None})

    def shutdown(self) -> None:
        """Stop the kernel's channels and the kernel (once)."""
        if self.kernel_client is not None:
            self.kernel_client.stop_channels()
            self.kernel_manager.shutdown_kernel()
            self.kernel_client = None


def open_console(window: QtWidgets.QMainWindow) -> PythonConsole | None:
    """Show the window's console, built the first time; without qtconsole a one-line message says
    how to install it (``None``)."""
    if not console_available():
        window.show_message("warning", translate("console", "The Python console needs qtconsole: {command}").format(command=INSTALL_HINT))
        return None
    console = window.findChild(PythonConsole)
    if console is None:
        console = PythonConsole(window)
    console.dock.show()
    console.dock.raise_()
    console.widget.setFocus()
    return console


def console_action(window: QtWidgets.QMainWindow) -> QtGui.QAction:
    """View → Python Console: opens the console dock (:func:`open_console`)."""
    act = QtGui.QAction(translate("console", "&Python Console"), window)
    act.setObjectName("pythonConsoleAction")
    act.setStatusTip(translate("console", "A Python console on this window: session, model, views and helpers ({command})")
                     .format(command=INSTALL_HINT))
    act.triggered.connect(lambda: open_console(window))
    return act
