"""The tour's text on a web page: the stops a tour panel has explained, as the page's notes
(File → Export Web Page while the tour is open), each with the kind, layer, head and step it
sets, which the page's matrix shows while the stop is shown, and its exercise, which the page
asks before it shows the stop (worked out when the page is written: :mod:`~attnviz.qt.publish.page_exercises`)."""

from __future__ import annotations

from attnviz.core.tour_data import Stop
from attnviz.qt.publish.web_page import PageChoice, PageNote
from attnviz.qt.tour import TourPanel


def panel_notes(panel: TourPanel | None) -> tuple[PageNote, ...]:
    """Each stop ``panel`` has explained, in the tour's order: its title and its text as the panel
    showed it, in the tour's language, with the sentence its numbers were read on, the choice
    it sets (:func:`stop_choice`) and its exercise. None when there is no panel or the tour was left."""
    if panel is None or not panel.active:
        return ()
    language = panel.tour.language
    return tuple(PageNote(text, stop.title, language, source, stop_choice(stop), stop.exercise) for stop, text, source in panel.visited_stops())


def stop_choice(stop: Stop) -> PageChoice:
    """The kind, layer, head, step (``None``: the last) and query row that ``stop`` sets in the window."""
    st = stop.state
    return PageChoice(st.kind, st.layer, st.head, st.steps, st.query)
