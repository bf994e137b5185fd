"""Below the input: what the model makes of the sentence typed, and how sure it is of it.

``QtSourceInfo`` shows three lines, all plain text:

* a banner when most of the source is UNK to the model's own tokenizer ("3141592 → UNK"), with
  what this model reads instead (its placeholder); unknown characters the font cannot draw show as
  their code point ("U+1F600"), never as boxes;
* the confidence line (``core.analysis.confidence``): the mean log-probability per token of the
  decoded sentence, the share of UNK in the source, and whether the source is a training sentence,
  a held-out one or new (a lookup in the corpus the bundle's meta.json names, in a worker thread);
* when the model is unsure, a note that the attention shown is that of a model that does not know
  this sentence, pointing to real pretrained models.

``sourceMapped(SourceMap | None)`` follows every change of the session's source or model.
"""

from __future__ import annotations

import json
from pathlib import Path

from PySide6 import QtCore, QtGui, QtWidgets

from attnviz.core.analysis.confidence import Confidence, assess
from attnviz.core.data.examples import better_bundled, data_spec, where_seen
from attnviz.core.data.source_map import SourceMap, map_source, shown_text
from attnviz.errors import one_line
from attnviz.qt.i18n import translate
from attnviz.qt.session import Session
from attnviz.qt.widgets.plain_text import plain_label
from attnviz.qt.workers import FunctionWorker, while_alive

READ_CORPUS_AFTER_MS = 700  # a model's corpus is read this long after it opens: its first decode goes first (both want the interpreter)

BANNER_STYLE = "QLabel { background: #fff4d6; color: #7a4a00; border: 1px solid #f0c36d; border-radius: 3px; padding: 3px 6px; }"
NOTE_STYLE = "QLabel { color: #9c3d00; }"


def pretrained_hint() -> str:
    return translate("source_info", "For real translations: File → Open Model Bundle… → a Marian opus-mt folder (see the README).")


def pretrained_tip() -> str:
    return translate("source_info", "Real pretrained translation models (Helsinki-NLP's opus-mt, e.g. opus-mt-zh-en) open directly: "
                                    "download the folder as the README's section 'Real translation models' says, then "
                                    "File → Open Model Bundle… and choose it.")


def seen_text(seen: str) -> str:
    """Where the corpus has the source (``Confidence.seen``), in words."""
    return {"train": translate("source_info", "a training sentence"), "valid": translate("source_info", "held out (valid split)"),
            "test": translate("source_info", "held out (test split)"), "new": translate("source_info", "a new sentence"),
            "": translate("source_info", "corpus not available"),
            "pending": translate("source_info", "looking it up in the corpus…")}.get(seen, seen)


def confidence_summary(c: Confidence) -> str:
    """One line: "mean log P -0.23/token (P ≈ 0.79, 6 tokens) · source UNK 0% · a training sentence"."""
    if c.mean_log_prob is None:
        lp = translate("source_info", "mean log P: no tokens yet")
    else:
        value = c.mean_log_prob if c.mean_log_prob <= -0.005 else 0.0  # never "-0.00"
        lp = translate("source_info", "mean log P {value:.2f}/token (P ≈ {prob:.2f}, {n} tokens)").format(
            value=value, prob=c.mean_prob, n=c.n_tokens)
    return translate("source_info", "{log_p} · source UNK {unk:.0%} · {seen}").format(log_p=lp, unk=c.unk_share, seen=seen_text(c.seen))


def reason_text(code: str, value: float) -> str:
    """One of ``Confidence.reason_codes`` in words."""
    return {"unk": translate("source_info", "{value:.0%} of the source is UNK"),
            "low": translate("source_info", "P ≈ {value:.2f} per token"),
            "new": translate("source_info", "not a training sentence; P ≈ {value:.2f} per token")}[code].format(value=value)


def is_imported(meta) -> bool:
    """A model imported from a Hugging Face folder (a real pretrained model)."""
    return "imported_from" in meta or "hf_config" in meta


class QtSourceInfo(QtWidgets.QWidget):
    """The UNK banner, the confidence line and the unsure note (see the module docstring)."""

    sourceMapped = QtCore.Signal(object)  # SourceMap | None

    def __init__(self, session: Session, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("sourceInfo")
        self.session = session
        self.source_map: SourceMap | None = None
        self.confidence: Confidence | None = None
        self.placeholder = ""  # what the model reads, e.g. "Symbols (0123456789) separated by spaces, e.g. 8 2 9 7"
        self._seen: dict[tuple[str, str], str] = {}  # (the model's corpus spec, source) → where the corpus has it
        self._lookup: FunctionWorker | None = None
        self._lookup_due: tuple[str, str] | None = None  # a lookup asked for, started after READ_CORPUS_AFTER_MS
        self.unk_banner = plain_label("", "unkBanner")
        self.unk_banner.setStyleSheet(BANNER_STYLE)
        self.confidence_label = plain_label("", "confidenceLabel")
        self.confidence_label.setToolTip(translate("source_info", "Mean log-probability per token of the decoded sentence (0 = certain), "
                                                                  "share of the source's tokens that are UNK, and whether the corpus has this sentence"))
        self.unsure_note = plain_label("", "unsureNote")
        self.unsure_note.setStyleSheet(NOTE_STYLE)
        self.unsure_note.setToolTip(pretrained_tip())
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(6, 0, 6, 2)
        layout.setSpacing(2)
        for label in (self.unk_banner, self.confidence_label, self.unsure_note):
            label.setWordWrap(True)
            label.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
            label.hide()
            layout.addWidget(label)
        self.better_model: Path | None = None  # the bundled model the unsure note names first
        self.better_button = QtWidgets.QPushButton(self)
        self.better_button.setObjectName("openBetterModelButton")
        self.better_button.clicked.connect(self.open_better_model)
        self.better_button.hide()
        layout.addWidget(self.better_button, 0, QtCore.Qt.AlignmentFlag.AlignLeft)
        session.modelChanged.connect(lambda _b: self.refresh())
        session.decodingChanged.connect(self.refresh)

    # -- updates --------------------------------------------------------------------------------
    def refresh(self) -> None:
        """Re-read the session: map its source, update the banner and the confidence."""
        bundle, source = self.session.bundle, self.session.source
        self.source_map = None
        if bundle is not None and source.strip():
            try:
                self.source_map = map_source(bundle.src_tokenizer, source)
            except Exception:  # noqa: BLE001 - unreadable text: the session reports it already
                self.source_map = None
        self._show_banner()
        self._show_confidence()
        self.sourceMapped.emit(self.source_map)

    def set_placeholder(self, text: str) -> None:
        self.placeholder = text
        self._show_banner()

    def _renderable(self, ch: str) -> bool:
        return QtGui.QFontMetrics(self.unk_banner.font()).inFontUcs4(ord(ch))

    def _show_banner(self) -> None:
        sm = self.source_map
        if sm is None or not sm.mostly_unknown:
            self.unk_banner.hide()
            return
        runs = translate("source_info", "; ").join(f"{shown_text(r, self._renderable)} → UNK" for r in sm.unknown_runs()[:4])
        text = translate("source_info", "⚠ Most of this input is unknown to this model: {runs} ({unknown} of {tokens} tokens are UNK).").format(
            runs=runs, unknown=sm.n_unknown, tokens=sm.n_tokens)
        if self.placeholder:
            text += translate("source_info", " It reads: {placeholder}").format(placeholder=self.placeholder.rstrip("."))
        self.unk_banner.setText(one_line(text, 400))
        self.unk_banner.show()

    def _show_confidence(self) -> None:
        cur, sm = self.session.current, self.source_map
        if cur is None or sm is None:
            self.confidence = None
            self.confidence_label.hide()
            self.unsure_note.hide()
            return
        self.confidence = assess([st.prob for st in cur.steps], sm.unk_share, sm.mostly_unknown, self._where_seen())
        line = (translate("source_info", "Typed target: {summary}") if self.session.forced is not None
                else translate("source_info", "Confidence: {summary}"))
        self.confidence_label.setText(one_line(line.format(summary=confidence_summary(self.confidence))))
        self.confidence_label.show()
        reasons = [reason_text(code, value) for code, value in self.confidence.reason_codes()]
        self._show_unsure(reasons)

    def _show_unsure(self, reasons: list[str]) -> None:
        """The unsure note: the better bundled model first (with a button that opens it), then
        real pretrained models; hidden when the model is sure."""
        bundle = self.session.bundle
        self.better_model = better_bundled(bundle.meta, bundle.path) if reasons else None
        self.better_button.setVisible(self.better_model is not None)
        if not reasons:
            self.unsure_note.hide()
            return
        note = translate("source_info", "⚠ Unsure ({reasons}): this attention is that of a model that does not know this sentence.").format(
            reasons=translate("source_info", "; ").join(reasons))
        if self.better_model is not None:
            name = self.better_model.name
            note += translate("source_info", " The bundled model {name} knows far more sentences: try it first.").format(name=name)
            self.better_button.setText(translate("source_info", "Open {name}").format(name=name))
        if not is_imported(bundle.meta):
            note += translate("source_info", " {hint}").format(hint=pretrained_hint())
        self.unsure_note.setText(one_line(note, 600))
        self.unsure_note.show()

    def open_better_model(self) -> None:
        """Open the bundled model the unsure note names (the sentence typed stays)."""
        if self.better_model is not None:
            self.session.open_model(self.better_model)

    # -- where the corpus has the source (worker thread: the first lookup loads the corpus) --------------
    def _key(self) -> tuple[str, str]:
        return json.dumps(data_spec(self.session.bundle.meta), sort_keys=True), self.session.source

    def _where_seen(self) -> str:
        """The cached answer, or "pending" while a lookup runs (one is started when needed)."""
        bundle, source = self.session.bundle, self.session.source
        key = self._key()
        if key in self._seen:
            return self._seen[key]
        if (self._lookup is None or self._lookup.is_done) and self._lookup_due is None:
            self._lookup_due = key
            QtCore.QTimer.singleShot(READ_CORPUS_AFTER_MS, self, lambda: self._look_up(bundle, source, key))
        return "pending"

    def _look_up(self, bundle, source: str, key: tuple[str, str]) -> None:
        """Look ``source`` up in ``bundle``'s corpus in a worker (its first reading is a second of
        pure Python, which would slow the first decode it ran beside: it starts later)."""
        self._lookup_due = None
        worker = FunctionWorker(where_seen, bundle.meta, source, inference=False)
        worker.returned.connect(while_alive(self, lambda seen, k=key, w=worker: self._on_seen(k, seen, w)))
        worker.errored.connect(while_alive(self, lambda _exc, k=key, w=worker: self._on_seen(k, "", w)))
        self._lookup = worker
        worker.start()

    def _on_seen(self, key: tuple[str, str], seen: str, worker: FunctionWorker | None = None) -> None:
        if worker is self._lookup:
            self._lookup = None  # the lookup that answered is over (its worker may not say so yet)
        self._seen[key] = seen
        if len(self._seen) > 500:
            self._seen.pop(next(iter(self._seen)))
        if self.session.bundle is not None and self._key() == key:
            self._show_confidence()
        elif self.session.bundle is not None:
            self._where_seen()  # the source changed while this lookup ran: look up the new one

    def lookup_pending(self) -> bool:
        """A corpus lookup is running (tests wait for it)."""
        return self._lookup_due is not None or (self._lookup is not None and not self._lookup.is_done)
