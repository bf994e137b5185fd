"""Session files in the window: File → Save Session… / Open Session…, ``attnviz --session FILE``
and a dropped ``.attnviz`` file. :func:`capture` reads the window into an :class:`AppState`;
:class:`SessionFiles` writes it, and restores one: the model is opened when it is not open
already (a missing folder, or one that is not a model folder, is asked for; a changed one is
named), the tokens are decoded again in one go, then the options, the selections, the layout and
the theme are applied."""

from __future__ import annotations

import os
from dataclasses import asdict
from pathlib import Path

from PySide6 import QtCore, QtWidgets

from attnviz.core.analysis.ablation import HeadSet
from attnviz.core.bundle import CONFIG
from attnviz.core.model.interventions import InterventionError
from attnviz.paths import bundled_replacement
from attnviz.qt.i18n import current_language, translate
from attnviz.qt.selection import Selection
from attnviz.qt.state import (
    SUFFIX,
    AppState,
    SessionFileError,
    decode_bytes,
    encode_bytes,
    load_state,
    model_hash,
    save_state,
    strategy_from_dict,
    strategy_to_dict,
)


def file_filter() -> str:
    """The file dialogs' filter: attnviz session files."""
    return translate("session_file", "attnviz sessions (*{suffix})").format(suffix=SUFFIX)


def capture(window: QtWidgets.QMainWindow) -> AppState:
    """The window (a ``qt.main_window.MainWindow``) as it is now."""
    s, views = window.session, window.views
    path = str(s.bundle.path) if s.bundle is not None and s.bundle.path else None
    d = s.decoding
    return AppState(
        model_path=path, model_hash=model_hash(path) if path else None, source=s.source, target=s.target,
        strategy=strategy_to_dict(s.strategy),
        tokens=list(d.tgt_ids[1:]) if d is not None and s.forced is None else [],
        forced=[st.index for st in d.steps if st.forced] if d is not None and s.forced is None else [],
        cursor=s.forced_cursor if s.forced is not None else None, decode_as_you_type=s.decode_as_you_type,
        selection=asdict(views.selection.value()),
        own={name: asdict(sel) for name, sel in views.own_selections().items()},
        options={name: view.options() for name, view in views.views.items()},
        layout=encode_bytes(window.layout_state().data()), geometry=encode_bytes(window.saveGeometry().data()),
        theme=window.theme_name, colormap=window.colormap_name, language=current_language(),
        ablation={"heads": s.ablation.text(), "kind": s.ablation.kind},
    )


def is_model_folder(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a folder a model can be opened from: one with a ``config.json`` (an
    attnviz bundle's or a Hugging Face model's); what a session names may be any folder (``/dev``)."""
    return Path(path).is_dir() and os.path.lexists(Path(path) / CONFIG)


def ablation_from_dict(d: dict) -> HeadSet:
    """The heads ``d`` names; :class:`SessionFileError` for a bad list or kind."""
    try:
        return HeadSet.parse(str(d.get("heads", "")), str(d.get("kind", "zero")))
    except InterventionError as exc:
        raise SessionFileError(translate("session_file", "bad ablation in the session file: {error}").format(error=exc)) from None


class SessionFiles(QtCore.QObject):
    """Saves and restores the window's :class:`AppState`. ``restored`` when a restore is done."""

    restored = QtCore.Signal()

    def __init__(self, window: QtWidgets.QMainWindow):
        super().__init__(window)
        self.window = window
        self._pending: AppState | None = None  # waiting for its model to load
        window.session.modelChanged.connect(self._on_model_changed)

    # -- saving -------------------------------------------------------------------------------
    def save_dialog(self) -> None:
        path, _ = QtWidgets.QFileDialog.getSaveFileName(self.window, translate("session_file", "Save session"), f"session{SUFFIX}", file_filter())
        if path:
            self.save(Path(path))

    def save(self, path: Path) -> Path | None:
        try:
            written = save_state(capture(self.window), path)
        except SessionFileError as exc:
            self.window.show_message("error", str(exc))
            return None
        self.window.show_message("info", translate("session_file", "Session saved to {path}").format(path=written))
        return written

    # -- opening --------------------------------------------------------------------------------
    def open_dialog(self) -> None:
        path, _ = QtWidgets.QFileDialog.getOpenFileName(self.window, translate("session_file", "Open session"), "", file_filter())
        if path:
            self.open(Path(path))

    def open(self, path: Path) -> bool:
        """Read ``path`` and restore it; a file that cannot be read changes nothing (one line says why)."""
        try:
            state = load_state(path)
            ablation_from_dict(state.ablation)
        except SessionFileError as exc:
            self.window.show_message("error", str(exc))
            return False
        return self.restore(state)

    def restore(self, state: AppState) -> bool:
        """Bring the window to ``state`` (when its model has to be opened first: once it is)."""
        found = self._model_folder(state)
        if found is None:
            return False
        folder, same_weights = found
        w, s = self.window, self.window.session
        w.apply_look(state.theme, state.colormap, decode_bytes(state.layout), decode_bytes(state.geometry))
        s.set_decode_as_you_type(False)  # the tokens are replayed, not decoded anew
        w.input_bar.set_texts(state.source, state.target)
        strategy = strategy_from_dict(state.strategy)
        w.step_bar.show_strategy(strategy)
        open_now = s.bundle is not None and s.bundle.path is not None and Path(s.bundle.path).resolve() == folder.resolve()
        inputs = dict(strategy=strategy, ablation=ablation_from_dict(state.ablation))
        if open_now and same_weights:
            s.apply(state.source, state.target, tokens=state.tokens, forced=state.forced, cursor=state.cursor, **inputs)
            self._settle(state)
        else:
            self._pending = state
            s.open_model(folder, source=state.source, target=state.target, **inputs)
        return True

    def _model_folder(self, state: AppState) -> tuple[Path, bool] | None:
        """The session's model folder and whether its weights are the saved ones (their hash is
        read once); a missing folder is asked for (``None``: none was given)."""
        w = self.window
        renamed = bundled_replacement(state.model_path) if state.model_path else None
        if renamed is not None:
            w.show_message("info", translate("session", "{old} is no longer bundled: opened {new} instead").format(old=state.model_path, new=renamed))
            return renamed, model_hash(renamed) == state.model_hash
        if state.model_path and is_model_folder(state.model_path):
            same = model_hash(state.model_path) == state.model_hash
            if state.model_hash and not same:
                w.show_message("warning", translate("session_file", "The model in {folder} has changed since the session was saved: "
                                                                    "its decoding may differ from the saved one").format(folder=state.model_path))
            return Path(state.model_path), same
        if state.model_path and Path(state.model_path).is_dir():
            w.show_message("warning", translate("session_file", "The session's model folder {folder} is not a model folder "
                                                                "(it holds no config.json): choose it").format(folder=state.model_path))
        else:
            folder = state.model_path or translate("session_file", "none recorded")
            w.show_message("warning", translate("session_file", "The session's model folder is missing ({folder}): choose it").format(folder=folder))
        chosen = w.ask_model_folder()
        return (Path(chosen), model_hash(chosen) == state.model_hash) if chosen else None

    def _on_model_changed(self, bundle) -> None:
        if self._pending is not None and bundle is not None:
            state, self._pending = self._pending, None
            QtCore.QTimer.singleShot(0, self, lambda: self._finish(state))  # after the session has rebuilt

    def _finish(self, state: AppState) -> None:
        """The model the session names is open: decode the saved tokens again (forced where they
        were forced), as one change, then the rest."""
        self.window.session.replay(state.tokens, state.forced, state.cursor)
        self._settle(state)

    def _settle(self, state: AppState) -> None:
        self.window.set_decode_as_you_type(state.decode_as_you_type)
        self._apply_choices(state)
        self.restored.emit()

    def _apply_choices(self, state: AppState) -> None:
        """Each view's options, then the selections (which win where they overlap)."""
        views = self.window.views
        for name, options in state.options.items():
            if name in views.views and isinstance(options, dict):
                views.views[name].set_options(options)
        try:
            views.selection.update(**asdict(Selection(**state.selection)))
            for name, sel in state.own.items():
                if name in views.views:
                    views.set_own_selection(name, Selection(**sel))
        except (TypeError, ValueError) as exc:
            self.window.show_message("warning", translate("session_file", "The session's selection was not applied: {error}").format(error=exc))
