"""The interface's languages, through Qt's own translation system.

Every visible string of ``attnviz/qt`` is written as ``translate("<module>", "English text")``
(the context is the module's name; a caption with values is translated first and filled with
``.format`` after, so ``pyside6-lupdate`` can extract it). ``make translations`` runs
``pyside6-lupdate`` over ``attnviz/qt`` into ``resources/i18n/attnviz_<language>.ts`` (the source
of the translations, kept in the repository) and ``pyside6-lrelease`` into the ``.qm`` files the app
loads (shipped; a test checks that they are built from the ``.ts`` as it is). Qt's own
``qtbase_<language>.qm`` comes with PySide6, so standard dialogs follow the language too.

English is the source language: it needs no catalog.
"""

from __future__ import annotations

from pathlib import Path

from PySide6 import QtCore

from attnviz.paths import resource

LANGUAGES = {"en": "English", "zh_CN": "简体中文"}  # code -> its name in itself (the menu shows these)
SOURCE_LANGUAGE = "en"
CATALOG = "attnviz"  # resources/i18n/attnviz_<language>.ts / .qm
SETTING = "view/language"


def translate(context: str, text: str, n: int = -1) -> str:
    """``text`` in the installed language (``context``: the module's name, as lupdate extracted it)."""
    return QtCore.QCoreApplication.translate(context, text, None, n)


def catalog_path(language: str, suffix: str = ".qm") -> Path:
    return resource("i18n", f"{CATALOG}_{language}{suffix}")


def system_language() -> str:
    """The language the system's locale asks for, when we have it (else English)."""
    name = QtCore.QLocale.system().name()  # e.g. zh_CN, zh_SG, en_US
    return "zh_CN" if name.startswith("zh") and not name.startswith(("zh_TW", "zh_HK", "zh_MO")) else SOURCE_LANGUAGE


def chosen_language(settings: QtCore.QSettings) -> str:
    """The language the user chose last (View → Language), else the system's."""
    value = str(settings.value(SETTING, "") or "")
    return value if value in LANGUAGES else system_language()


def current_language() -> str:
    app = QtCore.QCoreApplication.instance()
    return getattr(app, "_attnviz_language", SOURCE_LANGUAGE) if app is not None else SOURCE_LANGUAGE


def install(language: str) -> str:
    """Make ``language`` the interface's (Qt's dialogs included); widgets built from now on use it.
    -> the language installed (English when ``language`` is unknown or its catalog is missing)."""
    app = QtCore.QCoreApplication.instance()
    for old in getattr(app, "_attnviz_translators", ()):
        app.removeTranslator(old)
    translators = []
    if language in LANGUAGES and language != SOURCE_LANGUAGE:
        translators = _load(language)
    if not translators:
        language = SOURCE_LANGUAGE
    for t in translators:
        app.installTranslator(t)
    app._attnviz_translators = translators
    app._attnviz_language = language
    QtCore.QLocale.setDefault(QtCore.QLocale(language))
    return language


def _load(language: str) -> list[QtCore.QTranslator]:
    """Our catalog (required) and Qt's own (when PySide6 ships it) for ``language``."""
    ours = QtCore.QTranslator()
    if not ours.load(str(catalog_path(language))):
        return []
    qt = QtCore.QTranslator()
    qt_dir = QtCore.QLibraryInfo.path(QtCore.QLibraryInfo.LibraryPath.TranslationsPath)
    return [ours, qt] if qt.load(f"qtbase_{language}", qt_dir) else [ours]
