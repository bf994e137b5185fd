"""The walkthrough view's windows onto long axes (``d_model``, ``d_k``, the positions): which
slice of each axis the tables show, the axis titles that say so, and the scroll bars that move them.

``WalkthroughWindowsMixin`` is mixed into ``QtWalkthroughView`` (``qt_walkthrough_view``).
"""

from __future__ import annotations

from attnviz.qt.views.walkthrough_tables import WINDOW


class WalkthroughWindowsMixin:
    """Windows and scroll bars of ``QtWalkthroughView`` (mixed into the view)."""

    def _lengths(self) -> dict[str, int]:
        w = self._walk
        return {"model": w.d_model, "k": w.d_k, "pos": max(w.x.shape[0], w.x_kv.shape[0])}

    def _clamped(self, axis: str) -> int:
        n = self._lengths()[axis]
        return int(min(max(self._offsets[axis], 0), max(0, n - WINDOW[axis])))

    def _follow_query(self) -> None:
        """Keep the chosen query inside the position window."""
        w = self._walk
        start = self._clamped("pos")
        if not start <= w.query < start + WINDOW["pos"]:
            self._offsets["pos"] = max(0, w.query - WINDOW["pos"] + 1)
        self._update_scrollbars()

    def _axis_slice(self, axis: str, n: int) -> slice:
        if axis in ("query", "key"):
            start = self._clamped("pos")
            return slice(min(start, max(0, n - WINDOW["pos"])), min(n, start + WINDOW["pos"]))
        start = self._clamped(axis)
        return slice(start, min(n, start + WINDOW[axis]))

    def _labels(self, axis: str, n: int) -> list[str]:
        w = self._walk
        if axis == "query":
            return list(w.query_labels)
        if axis == "key":
            return list(w.key_labels)
        return [str(i) for i in range(n)]

    def _axis_title(self, axis: str, n: int, part: slice) -> str:
        name = {"query": "queries", "key": "keys", "model": "d_model", "k": "d_k"}[axis]
        if part.stop - part.start < n:
            return f"{name} {part.start}–{part.stop - 1} of {n}" if axis in ("model", "k") else f"{name} {part.start + 1}–{part.stop} of {n}"
        return name

    def _update_scrollbars(self) -> None:
        if self._walk is None:
            for bar in self.scrollbars.values():
                bar.setVisible(False)
            for lab in self._scroll_labels.values():
                lab.setVisible(False)
            return
        lengths = self._lengths()
        for axis, bar in self.scrollbars.items():
            n = lengths[axis]
            extra = max(0, n - WINDOW[axis])
            blocked = bar.blockSignals(True)
            bar.setRange(0, extra)
            bar.setPageStep(WINDOW[axis])
            bar.setValue(self._clamped(axis))
            bar.blockSignals(blocked)
            bar.setVisible(extra > 0)
            self._scroll_labels[axis].setVisible(extra > 0)
        self._update_scroll_labels()

    def _update_scroll_labels(self) -> None:
        if self._walk is None:
            return
        lengths = self._lengths()
        names = {"model": "d_model", "k": "d_k", "pos": "positions"}
        for axis, lab in self._scroll_labels.items():
            n = lengths[axis]
            s = self._clamped(axis)
            e = min(n, s + WINDOW[axis])
            lab.setText(f"{names[axis]} {s}–{e - 1}/{n}" if axis != "pos" else f"{names[axis]} {s + 1}–{e}/{n}")

    def _on_scrolled(self, axis: str, value: int) -> None:
        self._offsets[axis] = int(value)
        if self._walk is not None:
            self._refresh()
