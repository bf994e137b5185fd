"""The tour's text on a web page: the stops a tour panel has explained, as the page's notes
(File → Export Web Page while the tour is open)."""

from __future__ import annotations

from attnviz.qt.publish.web_page import PageNote
from attnviz.qt.tour import TourPanel


def panel_notes(panel: TourPanel | None) -> tuple[PageNote, ...]:
    """Each stop ``panel`` has explained, in the tour's order: its title and its text as the panel
    showed it, in the tour's language, with the sentence its numbers were read on. None when
    there is no panel or the tour was left."""
    if panel is None or not panel.active:
        return ()
    language = panel.tour.language
    return tuple(PageNote(text, stop.title, language, source) for stop, text, source in panel.visited_stops())
