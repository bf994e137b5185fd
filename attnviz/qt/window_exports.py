"""The window's File → Export entries (figure, data, animation, training animation, web page,
all heads) for the view the user last clicked: :class:`WindowExports`, owned by the main window,
which keeps its menus and actions. Each export asks where in a dialog and says in the window's
message bar what it wrote or why it could not."""

from __future__ import annotations

from PySide6 import QtWidgets

from attnviz.qt.i18n import translate
from attnviz.qt.tour import TourPanel
from attnviz.qt.views.registry import head_figure


class WindowExports:
    """``figure()``, ``data()``, ``animation()``, ``training_animation()``, ``web_page()``,
    ``all_heads()``: the exports of ``window``'s active view and sentence."""

    def __init__(self, window: QtWidgets.QMainWindow):  # the main window (its views, session, messages)
        self.window = window

    def figure(self) -> None:
        w = self.window
        view = w.active_view()
        w.views.bring_up_to_date(view)
        if hasattr(view, "export_figure_dialog"):
            view.export_figure_dialog()

    def data(self) -> None:
        w = self.window
        view = w.active_view()
        w.views.bring_up_to_date(view)
        if hasattr(view, "export_data_dialog"):
            view.export_data_dialog()

    def animation(self) -> None:
        """Export → Animation: the active view over every step of the sentence on screen."""
        from attnviz.qt.publish.animation import AnimationError, Panel, animation_dialog

        w = self.window
        s, name = w.session, w.views.name_of(w.active_view())
        if s.bundle is None or s.current is None or name is None:
            w.show_message("warning", translate("main_window", "Nothing to animate yet: open a model and type a sentence"))
            return
        panel = Panel(w.views.specs[name], w.views.followed(name))
        try:
            path = animation_dialog(w, s.bundle, s.source, s.target, panel, w.theme_name, s.strategy)
        except AnimationError as exc:
            w.show_message("error", str(exc))
            return
        if path is not None:
            w.show_message("info", translate("main_window", "Animation saved to {path}").format(path=path))

    def training_animation(self) -> None:
        """Export → Training Animation: the open model's first probe sentence at every training snapshot."""
        from attnviz.qt.publish.animation import AnimationError, snapshot_animation_dialog

        w = self.window
        bundle = w.session.bundle
        if bundle is None:
            return
        try:
            path = snapshot_animation_dialog(w, bundle.meta, bundle.name, w.theme_name)
        except AnimationError as exc:
            w.show_message("error", str(exc))
            return
        if path is not None:
            w.show_message("info", translate("main_window", "Animation saved to {path}").format(path=path))

    def web_page(self) -> None:
        """Export → Web Page: the grid and the view in front, every step of the sentence on screen,
        and, while the tour is open, the text of each stop it has explained."""
        from attnviz.errors import AttnvizError
        from attnviz.qt.publish.animation import Panel
        from attnviz.qt.publish.tour_notes import panel_notes
        from attnviz.qt.publish.web_page import web_page_dialog

        w = self.window
        s, name = w.session, w.views.name_of(w.active_view())
        if s.bundle is None or s.current is None:
            w.show_message("warning", translate("main_window", "Nothing to put on a page yet: open a model and type a sentence"))
            return
        names = ["grid"] + ([name] if name not in (None, "grid") else [])
        panels = [Panel(w.views.specs[n], w.views.followed(n)) for n in names]
        try:
            notes = panel_notes(w.findChild(TourPanel, "tourPanel"))
            path = web_page_dialog(w, s.bundle, s.source, s.target, panels, w.theme_name, s.strategy, notes)
        except AttnvizError as exc:
            w.show_message("error", str(exc))
            return
        if path is not None:
            w.show_message("info", translate("main_window", "Web page saved to {path}").format(path=path))

    def all_heads(self) -> None:
        """One figure per layer and head of the attention kind shown in the head detail."""
        from attnviz.qt.export.dialogs import export_all_heads_dialog

        w = self.window
        kind = w.head_detail.kind() or w.views.selection.value().kind
        data = w.session.frames.attention_data(kind)
        if data is None:
            w.show_message("warning", translate("main_window", "Nothing to export yet: decode a step first"))
            return
        written = export_all_heads_dialog(w, head_figure(), data, theme=w.theme_name, colormap=w.colormap_name)
        if written:
            w.show_message("info", translate("main_window", "Exported {n} figures to {folder}").format(n=len(written), folder=written[0].parent))
