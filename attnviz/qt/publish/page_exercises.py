"""The tour's exercises on the web page: a stop with an exercise asks before it shows.

The page is static and offline, so its exercises are worked out when it is written: for each tour
stop with an exercise, :func:`attnviz.core.exercises.compute` on the page's model and sentence
(and its typed target, if any), with the stop's kind, layer, head and query at the step the page
shows for the stop. What the page's script needs travels in the page's JSON data
(:func:`exercise_data`): the question (in the tour's language), what the window shows beside it,
the choices as the window labels them (a grid of cells for ``mask-cells``), the right answer(s),
each choice's number and the numbers the feedback quotes, and the feedback in the interface's
language, written with the window's words (:func:`attnviz.qt.exercises.feedback_text`) for a
right, a wrong and a skipped answer. A grid's wrong and skipped feedback depend on the cells
ticked: they travel as templates whose ``{hits}`` and ``{extra}`` (:data:`HITS`, :data:`EXTRA`)
the script fills with the counts of the cells the reader ticked.

The answer travels as data too: a reader who reads the page's source can see it. That is
acceptable for self-study, which is what the page is for; the window's exercises (each worked
out only when asked) are the ones to use where a score must be earned.

An exercise that cannot be worked out on the page's sentence is left out: its stop shows its
text and the matrix at once, as a stop without an exercise does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from attnviz.core.bundle import Bundle
from attnviz.core.exercises import Exercise, Question, compute
from attnviz.core.tour_data import StopExercise
from attnviz.errors import AttnvizError
from attnviz.qt.exercises import EXPLANATIONS, choice_labels, context_text, feedback_text, words
from attnviz.qt.i18n import translate

HITS = "{hits}"  # in a grid's feedback: the answer's cells the reader ticked
EXTRA = "{extra}"  # in a grid's feedback: the other cells the reader ticked
DECIMALS = 4  # the numbers of the choices, as they travel


@dataclass(frozen=True)
class PageExercise:
    """One stop's exercise as the page asks it: the question and the computed exercise, with its
    texts rendered in the interface's language."""

    question: str  # in the tour's language
    language: str  # the tour's ("zh_CN"); "": the page's
    exercise: Exercise
    choices: tuple[str, ...]  # the choices' labels, as the window shows them
    context: str  # what the window shows beside the question (nothing that gives the answer away)
    feedback: dict[str, str]  # verdict ("right", "wrong", "skipped") -> its text


def page_exercise(bundle: Bundle, asked: StopExercise, question: Question, language: str = "") -> PageExercise | None:
    """``asked`` worked out on ``question`` (the page's sentence, the stop's selection and step);
    ``None`` when it cannot be on this model and sentence."""
    try:
        e = compute(bundle, asked.kind, question, asked.options())
    except (AttnvizError, ValueError, IndexError, KeyError, RuntimeError):
        return None
    return PageExercise(asked.question, language, e, choice_labels(e), context_text(e), feedback_texts(e))


def feedback_texts(e: Exercise) -> dict[str, str]:
    """The feedback for each verdict, with the live numbers. A list's does not depend on the
    choice (a wrong one names the answer); a grid's wrong and skipped ones are templates of the
    cells ticked (:data:`HITS`, :data:`EXTRA`)."""
    right = feedback_text(e, frozenset(e.answers), "right")
    if not e.multiple:
        return {"right": right, "wrong": feedback_text(e, frozenset(), "wrong"), "skipped": feedback_text(e, frozenset(), "skipped")}
    body = translate("exercise", EXPLANATIONS[e.kind]).format(**words(e), hits=HITS, extra=EXTRA)
    return {"right": right, "wrong": f"{translate('exercise', 'Not quite.')} {body}",
            "skipped": f"{translate('exercise', 'Skipped.')} {body}"}


def exercise_data(p: PageExercise) -> dict:
    """What the page's script reads of an exercise (JSON; its texts are put in the page as text)."""
    e = p.exercise
    return {"kind": e.kind, "question": p.question, "lang": p.language.replace("_", "-"), "context": p.context,
            "choices": list(p.choices), "columns": e.columns, "answers": list(e.answers),
            "values": [_number(v) for v in e.values], "numbers": {k: _number(v) for k, v in e.numbers.items()},
            "feedback": dict(p.feedback)}


def _number(v: Any) -> Any:
    """A float rounded to :data:`DECIMALS` (``None`` when it is not finite: JSON has no NaN); anything else as it is."""
    if isinstance(v, float):
        return round(v, DECIMALS) if math.isfinite(v) else None
    return v
