"""attnviz in a notebook: :func:`show` draws one of the app's views off screen and returns a
:class:`Figure` that Jupyter shows inline (``_repr_png_``) — the same picture ``attnviz export``
writes for the same arguments, drawn by the same code (the view registry feeds the view;
:func:`attnviz.qt.export.files.render_view_to_bytes` renders it).

    >>> from attnviz.notebook import show
    >>> show("models/zh-en", "我爱你。", view="grid", kind="cross")        # doctest: +SKIP
    >>> show(bundle, "猫吃鱼。", "The cat eats fish.", view="head", layer=2, head=1)  # doctest: +SKIP
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from PIL import Image

    from attnviz.core.bundle import Bundle
    from attnviz.qt.selection import ViewChoice
    from attnviz.qt.views.spec import ViewSpec

SIZE = (1000, 760)  # logical pixels: ``attnviz export``'s default --size


@dataclass(frozen=True)
class Figure:
    """A view drawn to PNG: shown inline by Jupyter, ``image()`` as a PIL image, ``save(path)``."""

    png: bytes
    view: str

    def _repr_png_(self) -> bytes:
        return self.png

    def image(self) -> Image.Image:
        from PIL import Image

        return Image.open(io.BytesIO(self.png))

    @property
    def size(self) -> tuple[int, int]:
        return self.image().size

    def save(self, path: str | os.PathLike) -> None:
        with open(path, "wb") as f:
            f.write(self.png)


def show(model: str | os.PathLike | Bundle, src: str, tgt: str | None = None, view: str = "grid", *,
         size: tuple[int, int] = SIZE, theme: str = "light", **choice: Any) -> Figure:
    """View ``view`` (a ``--view`` name of ``attnviz export``) of ``model`` (a bundle folder or a
    loaded :class:`~attnviz.core.bundle.Bundle`) on ``src``, decoded greedily to the end or, with
    ``tgt``, teacher-forced; ``choice``: ``kind``, ``layer``, ``head`` and ``query`` as ``attnviz
    export`` takes them (layer, head and query 1-based; ``head`` also ``"mean"`` or ``"rollout"``).
    An error is an :class:`attnviz.errors.AttnvizError` of one line."""
    from attnviz.commands.replay import offscreen_unless_a_display

    offscreen_unless_a_display()
    from attnviz.qt.app import make_app
    from attnviz.qt.export.files import render_view_to_bytes
    from attnviz.qt.views.registry import build_view, show_in_view, view_spec

    make_app()
    spec = view_spec(view)
    session = _session(model, src, tgt)
    figure = build_view(spec, theme=theme)
    try:
        show_in_view(spec, figure, session, _choice(spec, session, choice))
        figure.resize(*size)
        return Figure(render_view_to_bytes(figure, "png"), spec.name)
    finally:
        figure.close()
        figure.deleteLater()
        session.deleteLater()


def _session(model: str | os.PathLike | Bundle, src: str, tgt: str | None):
    """A session on ``model`` with ``src`` decoded to the end, or teacher-forced on ``tgt``."""
    from attnviz.core.bundle import Bundle, load_bundle
    from attnviz.errors import CommandError
    from attnviz.qt.session import Session

    bundle = model if isinstance(model, Bundle) else load_bundle(model)
    session = Session()
    session.set_bundle(bundle)
    error = session.apply(src, tgt or "")
    session.finish_runs()  # a teacher-forced or encoder-only pass runs in a worker
    if session.current is None:
        raise CommandError(session.error or "nothing to draw")
    if error:
        raise CommandError(error)
    return session


def _choice(spec: ViewSpec, session, given: dict[str, Any]) -> ViewChoice:
    """``given`` (1-based, as ``attnviz export`` takes it) as the view's 0-based choice; a kind the
    model has not, when none was asked, its first of cross, decoder and encoder."""
    from attnviz.core.model.sites import first_kind
    from attnviz.errors import CommandError
    from attnviz.qt.selection import ViewChoice

    unknown = set(given) - {"kind", "layer", "head", "query"}
    if unknown:
        raise CommandError(f"show() takes kind, layer, head and query, not {', '.join(sorted(unknown))}")
    head = given.get("head", 1)
    mode = head if head in ("mean", "rollout") else "head"
    kind = given.get("kind") or spec.default_kind
    if "kind" not in given and kind is not None and not session.n_layers(kind):
        kind = first_kind(spec.kinds, session.bundle.config) or kind
    return ViewChoice(kind=kind if spec.takes("kind") else None, layer=int(given.get("layer", 1)) - 1 if spec.takes("layer") else None,
                      head=(0 if mode != "head" else int(head) - 1) if spec.takes("head") else None,
                      mode=mode if spec.takes("head") else None, query=None if given.get("query") is None else int(given["query"]) - 1)
