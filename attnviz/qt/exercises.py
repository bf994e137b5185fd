"""The tour's exercises in the window: a stop with an exercise asks before it shows.

When such a stop is explained, :class:`ExerciseHost` hides the stop's text and covers its view
(:class:`~attnviz.qt.widgets.exercise_panel.ExerciseCover`), asks the question in the tour panel
and computes the answer from the live model and sentence in a worker (an
:class:`~attnviz.qt.analyses.Analysis` of :func:`attnviz.core.exercises.compute` on the window's
sentence, tokens and selection). Check gives the verdict and feedback with the live numbers, Skip
gives the answer; either uncovers the view and shows the text. The score, "n of m right" over
the tour's exercises, runs below. A stop answered before shows its answer again, uncovered. A
window that is never on screen (the tour a web page explains offscreen) asks nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6 import QtCore, QtWidgets
from PySide6.QtCore import QT_TRANSLATE_NOOP

from attnviz.core.exercises import Exercise, Question, compute
from attnviz.core.model.config import NORM_NAMES
from attnviz.core.tour_data import Stop, Tour
from attnviz.qt.analyses import Analyses, Analysis
from attnviz.qt.i18n import translate
from attnviz.qt.widgets.exercise_panel import ExerciseCover, ExercisePanel

KEY = "exercise"
LISTED = 4  # choices the feedback lists with their numbers

#: The answer words of :mod:`attnviz.core.exercises`, as the panel shows them.
CHOICE_WORDS = {
    "yes": QT_TRANSLATE_NOOP("exercise", "yes"),
    "no": QT_TRANSLATE_NOOP("exercise", "no"),
    "sharper": QT_TRANSLATE_NOOP("exercise", "sharper"),
    "flatter": QT_TRANSLATE_NOOP("exercise", "flatter"),
    "unchanged": QT_TRANSLATE_NOOP("exercise", "unchanged"),
}

#: What each kind shows beside its question before the answer (nothing that gives it away).
CONTEXTS = {
    "cross-argmax": QT_TRANSLATE_NOOP("exercise", "Decoder row {row}, fed “{fed}” · layer {layer} · {heads}"),
    "next-token": QT_TRANSLATE_NOOP("exercise", "After “{prefix}”"),
    "pe-off-order": QT_TRANSLATE_NOOP("exercise", "“{a}” and “{b}”"),
    "mask-cells": QT_TRANSLATE_NOOP("exercise", "Decoder self-attention over {pieces}"),
    "important-head": QT_TRANSLATE_NOOP("exercise", "Output {position}: “{token}” · layer {layer}"),
    "norm-batch": QT_TRANSLATE_NOOP("exercise", "{norm_name} · the sentence in a batch of {sentences}, and alone"),
    "scaling": QT_TRANSLATE_NOOP("exercise", "Query “{query}”"),
    "shape": QT_TRANSLATE_NOOP("exercise", "The head selected, on the sentence in the window"),
}

#: The feedback of each kind, quoting the live numbers.
EXPLANATIONS = {
    "cross-argmax": QT_TRANSLATE_NOOP("exercise", "The row weighs {ranked} …"),
    "next-token": QT_TRANSLATE_NOOP("exercise", "Greedy decoding appends “{token}” (P = {prob:.3f}); the choices: {ranked}."),
    "pe-off-order": QT_TRANSLATE_NOOP("exercise", "Without PE: “{a_no_pe}” and “{b_no_pe}” ({same}). With PE: “{a_pe}” and “{b_pe}”."),
    "mask-cells": QT_TRANSLATE_NOOP("exercise", "M is −∞ in {masked} of the {size} × {size} cells, every one above the diagonal, "
                                    "and their weights are at most {blocked_max:g}. You ticked {hits} of them and {extra} others."),
    "important-head": QT_TRANSLATE_NOOP("exercise", "Δ log P(“{token}”) with each head switched off: {ranked} (log P = {log_prob:.3f})."),
    "norm-batch": QT_TRANSLATE_NOOP("exercise", "In the batch and alone, the sentence's outputs of its {sites} norms differ by at most "
                                    "{change:.4f}."),
    "scaling": QT_TRANSLATE_NOOP("exercise", "Entropy {entropy_scaled:.3f} nats with ÷√d_k (√d_k = {sqrt_dk:.2f}), "
                                 "{entropy_unscaled:.3f} without; the largest weight {max_scaled:.3f} → {max_unscaled:.3f}."),
    "shape": QT_TRANSLATE_NOOP("exercise", "{queries} queries ({query_pieces}) × {keys} keys ({key_pieces})."),
}


@dataclass(frozen=True)
class Outcome:
    """An exercise answered: the exercise (``None``: skipped before it was computed), the chosen
    indices and the verdict (``right``, ``wrong`` or ``skipped``)."""

    exercise: Exercise | None
    chosen: frozenset[int]
    verdict: str


def live_question(window: QtWidgets.QMainWindow) -> Question:
    """The window's sentence, tokens and linked selection as a :class:`Question`."""
    s, sel = window.session, window.views.selection.value()
    steps = s.forced_cursor + 1 if s.forced is not None else s.n_rows()
    return Question(s.source, s.target, steps, sel.kind, sel.layer, None if sel.mode == "mean" else sel.head, sel.query)


def choice_labels(e: Exercise) -> tuple[str, ...]:
    if e.kind == "important-head":
        return tuple(translate("exercise", "head {n}").format(n=c) for c in e.choices)
    return tuple(translate("exercise", CHOICE_WORDS[c]) if c in CHOICE_WORDS else c for c in e.choices)


def words(e: Exercise) -> dict:
    """The numbers of ``e`` and the phrases its texts quote."""
    labels = choice_labels(e)
    ranked = ", ".join(f"{labels[i]} {e.values[i]:.3f}" for i in e.ranked()[:LISTED])
    n = e.numbers
    heads = translate("exercise", "mean of heads") if n.get("head") is None else translate("exercise", "head {n}").format(n=n["head"])
    same = translate("exercise", "the same") if n.get("a_no_pe") == n.get("b_no_pe") else translate("exercise", "different")
    return {**n, "ranked": ranked, "heads": heads, "same": same, "norm_name": NORM_NAMES.get(n.get("norm"), n.get("norm")),
            "prefix": n.get("prefix") or translate("exercise", "SOS")}


def context_text(e: Exercise) -> str:
    return translate("exercise", CONTEXTS[e.kind]).format(**words(e))


def feedback_text(e: Exercise | None, chosen: frozenset[int], verdict: str) -> str:
    """The verdict and the explanation with the live numbers."""
    if e is None:
        return translate("exercise", "Skipped.")
    answer = "" if e.multiple else choice_labels(e)[e.answer]
    if verdict == "right":
        head = translate("exercise", "Right.")
    elif e.multiple:
        head = translate("exercise", "Not quite.") if verdict == "wrong" else translate("exercise", "Skipped.")
    elif verdict == "wrong":
        head = translate("exercise", "Not quite: the answer is “{answer}”.").format(answer=answer)
    else:
        head = translate("exercise", "Skipped: the answer is “{answer}”.").format(answer=answer)
    hits = len(chosen & set(e.answers))
    body = translate("exercise", EXPLANATIONS[e.kind]).format(**words(e), hits=hits, extra=len(chosen) - hits)
    return f"{head} {body}"


class ExerciseHost(QtCore.QObject):
    """A tour panel's exercises: :attr:`panel` (put in the tour's dock) asks, ``text`` (the
    stop's text) is hidden and the stop's view covered until the question is answered or
    skipped. ``outcomes``: each stop answered, by id; ``exercise``: the current one once computed."""

    def __init__(self, parent: QtWidgets.QWidget, text: QtWidgets.QWidget):
        super().__init__(parent)
        self.panel = ExercisePanel(parent)
        self.text = text
        self.analyses = Analyses(self)
        self.outcomes: dict[str, Outcome] = {}
        self.stop: Stop | None = None
        self.exercise: Exercise | None = None
        self.tour: Tour | None = None
        self._cover: ExerciseCover | None = None
        self.panel.checked.connect(self._check)
        self.panel.skipped.connect(self.skip)
        self.analyses.failed.connect(self._failed)
        self.panel.hide()

    def ask(self, window: QtWidgets.QMainWindow, tour: Tour, index: int) -> None:
        """Stop ``index`` of ``tour`` is explained: ask its exercise (or show its answer again)."""
        self.clear()
        self.tour, stop = tour, tour.stops[index]
        self.stop, self.exercise = stop, None
        self.panel.set_words()
        self._update_score(index)
        offscreen = window.testAttribute(QtCore.Qt.WidgetAttribute.WA_DontShowOnScreen)  # a web page's tour: nobody to ask
        body = stop.exercise is not None and not offscreen
        self.panel.set_body_visible(body)
        self.panel.setVisible(body or bool(self.panel.score.text()))
        if not body:
            return
        self.panel.ask(stop.exercise.question)
        outcome = self.outcomes.get(stop.id)
        if outcome is not None:
            self._show(outcome)
            return
        self.text.hide()
        self._cover = ExerciseCover(window.views.frames[stop.view], translate(
            "exercise", "Answer the question in the tour panel (or skip it) to see this view."))
        analysis = Analysis(compute, (window.session.bundle, stop.exercise.kind, live_question(window), stop.exercise.options()))
        self.analyses.submit(KEY, analysis, lambda exercise: self._computed(stop.id, exercise))

    def _asking(self, stop_id: str) -> bool:
        """Stop ``stop_id``'s exercise is asked and not answered yet."""
        return self.stop is not None and self.stop.id == stop_id and stop_id not in self.outcomes

    def _computed(self, stop_id: str, exercise: Exercise) -> None:
        if not self._asking(stop_id):  # a result that arrived after the answer or the stop
            return
        self.exercise = exercise
        self.panel.set_choices(choice_labels(exercise), exercise.columns, context_text(exercise))

    def _check(self, chosen: frozenset[int]) -> None:
        if self.exercise is None or self.stop is None or not self._asking(self.stop.id):
            return
        self._answer(Outcome(self.exercise, frozenset(chosen), "right" if self.exercise.is_right(chosen) else "wrong"))

    def skip(self) -> None:
        """Skip the question asked (as the Skip button): the answer is shown, the view uncovered."""
        if self.stop is not None and self._asking(self.stop.id):
            self.analyses.cancel()
            self._answer(Outcome(self.exercise, self.panel.chosen(), "skipped"))

    def _failed(self, _key: str, message: str) -> None:
        if self.stop is not None and self._asking(self.stop.id):
            self.panel.show_feedback("skipped", translate("exercise", "The answer could not be computed: {why}").format(why=message))
            self.outcomes[self.stop.id] = Outcome(None, frozenset(), "skipped")
            self._reveal()

    def _answer(self, outcome: Outcome) -> None:
        self.outcomes[self.stop.id] = outcome
        self._show(outcome)
        self._update_score(self.tour.ids().index(self.stop.id))

    def _show(self, outcome: Outcome) -> None:
        e = outcome.exercise
        if e is not None and self.exercise is None:
            self.panel.set_choices(choice_labels(e), e.columns, context_text(e))
        self.exercise = e
        self.panel.choose(outcome.chosen)
        self.panel.show_feedback(outcome.verdict, feedback_text(e, outcome.chosen, outcome.verdict))
        self._reveal()

    def _reveal(self) -> None:
        if self._cover is not None:
            self._cover.remove()
            self._cover = None
        self.text.show()

    def score(self) -> tuple[int, int]:
        """(right answers, exercises in the tour)."""
        total = sum(s.exercise is not None for s in self.tour.stops) if self.tour is not None else 0
        ids = set(self.tour.ids()) if self.tour is not None else set()
        return sum(o.verdict == "right" for i, o in self.outcomes.items() if i in ids), total

    def _update_score(self, index: int) -> None:
        """The running score, once an exercise is answered, and always at the tour's last stop."""
        right, total = self.score()
        last = self.tour is not None and index + 1 == len(self.tour.stops)
        shown = total and (self.outcomes or last)
        self.panel.set_score(translate("exercise", "{n} of {m} right").format(n=right, m=total) if shown else "")

    def clear(self) -> None:
        """Uncover the view and show the text; a computation running is dropped (another stop, the tour left)."""
        self.analyses.cancel()
        self._reveal()
        self.stop, self.exercise = None, None

    def forget(self) -> None:
        """Another tour: no answers, no score."""
        self.clear()
        self.outcomes.clear()
        self.panel.set_score("")
        self.panel.hide()
