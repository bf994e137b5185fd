"""The guided tour (Help → Tour) as data: one JSON file per language in ``resources/tour/``,
read and checked here, without Qt (the window's :mod:`attnviz.qt.tour` shows it).

A tour file::

    {"format": "attnviz-tour", "version": 1, "language": "en",
     "labels": {"title": "Tour", "back": "Back", "next": "Next", "leave": "Leave",
                "counter": "{n} / {total}", "waiting": "…"},
     "stops": [STOP, …]}

A stop::

    {"id": "look-ahead-mask",                    # every language has the same ids, in the same order
     "title": "The look-ahead mask",
     "view": "mask",                             # the view raised: a view name of the registry
     "state": {"source": "我喜欢吃鱼。",          # the sentence typed in
               "target": "",                      # optional; a target means teacher-forced mode
               "steps": "end",                    # tokens decoded (teacher-forced: the position), or "end"
               "selection": {"kind": "decoder", "layer": 1, "head": 1, "query": null},
               "focus": ["开心", "兴奋"]},         # optional: source words some measures rank
     "highlight": "mask-upper-triangle",         # one of REGIONS, in the stop's view
     "text": "… exactly {mask_upper_max:g} …",    # placeholders: MEASURES of the stop's view, format specs
     "positional": ["sinusoidal"],               # optional: the positional schemes the text describes (POSITIONALS)
     "exercise": {"kind": "mask-cells",          # optional: asked before the stop's text and view show
                  "question": "Which cells …?"}} # plain text (or by language); "heads": "mean" for cross-argmax

Layers, heads and query rows are counted from 1 in the file, as on screen (``query`` null: the
current step's row); :class:`StopState` holds them 0-based.

A teacher's tour (``.attnviz-tour``, written by the window's Tour → Record, :mod:`attnviz.core.tour_file`)
is the same format, version 2, which adds what a bundled tour does not need::

    {"format": "attnviz-tour", "version": 2,
     "model": "zh-en",                            # optional: a folder of models/, or an absolute path
     "stops": [{"text": {"en": "…", "zh_CN": "…"}, # a text (and a title) in either language or both
                "view": "grid", "state": {…}}]}   # any view of the window; "highlight" "view" when absent

``language`` (the language of texts written as plain strings, default ``en``), ``labels`` (default:
the bundled tour's of the language read), a stop's ``id`` (default ``stop-N``), ``title``
(default none) and ``highlight`` may be left out. A text given in both languages is read in the
one asked for (:func:`load_tour_file`), else in the other; every language's text is checked. The
views a stop may raise are the caller's (the window's registry, :func:`load_tour_file`'s
``views``; by default :data:`VIEWS`). A tour that names a model is refused when the folder is not
there, and a stop that its model cannot show (a layer or head it has not, more steps than it
decodes) is refused at once. The text is plain text with named
placeholders only; every number it quotes comes from a measure of the live window, so a literal
decimal number in a text is refused. A file that breaks any rule is refused with one line naming
the file and the stop (:class:`TourError`).

An exercise (one of :data:`EXERCISE_KINDS`) asks a question whose answer the window computes
from the live model and sentence (:mod:`attnviz.core.exercises`): the file holds its kind and its
question only. An exercise that gives an answer (an ``answer``, ``correct``, … key, or any
number to match) is refused, and so is a question with a placeholder or a measured number in it.

A stop explains what a model has: :func:`stop_mismatch` says why one does not apply to a model (it
shows attention of a kind the model has no layers of, or its text describes a positional scheme
other than the model's), so that it is refused at once instead of explained with nothing to show.
"""

from __future__ import annotations

import json
import re
import string
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from attnviz.core.model.config import POSITIONALS, TransformerConfig, shown
from attnviz.core.model.sites import n_layers
from attnviz.errors import AttnvizError, one_line

FORMAT = "attnviz-tour"
VERSION = 2  # 2: a teacher's tour (texts in both languages, the model, optional labels, ids and titles)
LANGUAGES: tuple[str, ...] = ("en", "zh_CN")
MAX_BYTES = 1024 * 1024  # a tour file is small: a larger one is not one of ours
MAX_TITLE = 80
MAX_TEXT = 700
MAX_SOURCE = 2000  # characters of a stop's sentence (and of its target)
MAX_STEPS = 65_536  # tokens a stop may decode: the longest sequence any model has (its config's max_len)
MAX_MODEL = 1000  # characters of the model folder a tour names
KINDS = ("encoder", "decoder", "cross")
_ID = re.compile(r"^[a-z][a-z0-9-]{0,39}$")
_DECIMAL = re.compile(r"\d[.,]\d")  # a measured value written into the text by hand
_SAMPLES = {"number": 0.5, "integer": 3, "text": "x"}  # what a format spec must be able to format


class TourError(AttnvizError):
    """A tour file that cannot be used: one line naming the file (and the stop) and the problem."""


@dataclass(frozen=True)
class Measure:
    """A number (or piece of text) a stop's text can quote, read from the live window: from
    ``view`` (``None``: from the open model itself). ``kind``: ``number``, ``integer`` or ``text``."""

    view: str | None
    kind: str
    about: str


def _m(view: str | None, kind: str, about: str) -> Measure:
    return Measure(view, kind, about)


#: Every measure a stop's text can quote; :mod:`attnviz.qt.tour` computes each from the window.
MEASURES: dict[str, Measure] = {
    # the open model
    "d_model": _m(None, "integer", "d_model"),
    "d_k": _m(None, "integer", "d_k = d_model / h"),
    "n_heads": _m(None, "integer", "h, the heads of every attention block"),
    "d_ff": _m(None, "integer", "the FFN's hidden width"),
    "encoder_layers": _m(None, "integer", "N of the encoder"),
    "decoder_layers": _m(None, "integer", "N of the decoder"),
    "target_vocab": _m(None, "integer", "the output layer's vocabulary size"),
    # head detail: the outlined row (the stop's query row, else the current step's)
    "head_layer": _m("head", "integer", "the layer shown (1-based)"),
    "head_head": _m("head", "integer", "the head shown (1-based)"),
    "head_query": _m("head", "text", "the row's piece"),
    "head_keys": _m("head", "integer", "the row's keys"),
    "head_row_sum": _m("head", "number", "the row's sum"),
    "head_max_weight": _m("head", "number", "the row's largest weight"),
    "head_max_key": _m("head", "text", "the key it goes to"),
    # attention vs attribution: the output token the view explains
    "attr_token": _m("attribution", "text", "the output piece explained"),
    "attr_position": _m("attribution", "integer", "its output position (1-based)"),
    "attr_sources": _m("attribution", "integer", "source pieces ranked"),
    "attr_focus_ranks": _m("attribution", "text", "the focus words' pieces and their cross-attention ranks"),
    "attr_attention_top": _m("attribution", "text", "the three pieces cross-attention ranks first"),
    "attr_ig_top": _m("attribution", "text", "the three pieces integrated gradients rank first"),
    "attr_rho": _m("attribution", "number", "mean Spearman ρ between attention and attribution measures"),
    "attr_known": _m("attribution", "number", "typed target tokens the model predicts, teacher-forced"),
    "attr_targets": _m("attribution", "number", "tokens of the typed target, EOS included"),
    "attr_accuracy": _m("attribution", "number", "teacher-forced token accuracy on the typed target"),
    # the one-head walkthrough: its query row
    "walk_query": _m("walkthrough", "text", "the query's piece"),
    "walk_top_key": _m("walkthrough", "text", "the key with the largest score (and weight)"),
    "walk_top_score": _m("walkthrough", "number", "its score in Q_i K_iᵀ"),
    "walk_top_weight": _m("walkthrough", "number", "its weight in A_i"),
    "walk_row_sum": _m("walkthrough", "number", "the sum of the query's row of A_i"),
    "walk_min_weight": _m("walkthrough", "number", "the row's smallest weight"),
    "walk_z": _m("walkthrough", "number", "Z_i of the query, column 0"),
    "walk_head": _m("walkthrough", "integer", "the head i shown (1-based)"),
    "walk_head_first": _m("walkthrough", "integer", "the first column of Concat(Z_1..Z_h) that is Z_i (0-based)"),
    "walk_head_last": _m("walkthrough", "integer", "the last one"),
    # why ÷√d_k: the selected layer, mean over heads and rows
    "scale_sqrt_dk": _m("scaling", "number", "√d_k"),
    "scale_max_scaled": _m("scaling", "number", "mean largest weight of a row, with ÷√d_k"),
    "scale_max_unscaled": _m("scaling", "number", "the same without it"),
    "scale_entropy_scaled": _m("scaling", "number", "mean row entropy (nats), with ÷√d_k"),
    "scale_entropy_unscaled": _m("scaling", "number", "the same without it"),
    # word order (compare)
    "cmp_a": _m("compare", "text", "source A"),
    "cmp_b": _m("compare", "text", "source B"),
    "cmp_max_difference": _m("compare", "number", "max |C_A − C_B| over matched tokens, with PE"),
    "cmp_translation_a": _m("compare", "text", "A's greedy translation with PE"),
    "cmp_translation_b": _m("compare", "text", "B's greedy translation with PE"),
    "cmp_translation_no_pe": _m("compare", "text", "A's greedy translation without PE"),
    # the residual stream
    "res_formula": _m("residual", "text", "where the model normalizes"),
    "res_first": _m("residual", "number", "mean ‖x‖ of the encoder after the embedding"),
    "res_last": _m("residual", "number", "mean ‖x‖ of the encoder after its last sublayer"),
    # LayerNorm vs BatchNorm on the same activations
    "norm_token": _m("norm", "text", "the marked token (LN's row)"),
    "norm_ln_mean": _m("norm", "number", "its features' mean"),
    "norm_ln_std": _m("norm", "number", "its features' σ"),
    "norm_feature": _m("norm", "integer", "the marked feature (BN's column, 0-based)"),
    "norm_bn_mean": _m("norm", "number", "that feature's mean over the tokens"),
    "norm_bn_std": _m("norm", "number", "its σ over the tokens"),
    "norm_tokens": _m("norm", "integer", "the tokens BN averages over"),
    # the FFN
    "ffn_layer": _m("ffn", "integer", "the layer shown (1-based)"),
    "ffn_off": _m("ffn", "number", "the share of hidden units that are 0 in this layer"),
    "ffn_token": _m("ffn", "text", "the selected token"),
    "ffn_active": _m("ffn", "integer", "its hidden units that are not 0"),
    # model info
    "info_parameters": _m("model-info", "integer", "the model's parameters"),
    # the output distribution
    "out_fed": _m("output", "text", "teacher forcing: the decoder's input, SOS + y"),
    "out_labels": _m("output", "text", "teacher forcing: the labels, y + EOS"),
    "out_positions": _m("output", "integer", "teacher forcing: the positions"),
    "out_loss": _m("output", "number", "teacher forcing: mean loss −log P(label)"),
    "out_step": _m("output", "integer", "the step shown (1-based)"),
    "out_token": _m("output", "text", "its most likely piece"),
    "out_prob": _m("output", "number", "its probability"),
    "out_entropy": _m("output", "number", "the distribution's entropy (nats)"),
    # teacher forcing vs the inference loop
    "tvf_departure": _m("teacher-vs-free", "integer", "the first position where the loop departs (1-based)"),
    "tvf_free": _m("teacher-vs-free", "text", "the loop's piece there"),
    "tvf_reference": _m("teacher-vs-free", "text", "the reference's piece there"),
    # the masks
    "mask_upper_max": _m("mask", "number", "the largest weight above the diagonal"),
    "mask_masked": _m("mask", "integer", "cells above the diagonal"),
    "mask_row": _m("mask", "integer", "the current step's row (1-based)"),
    "mask_row_sum": _m("mask", "number", "its sum"),
    "mask_allowed": _m("mask", "integer", "the keys it may see"),
}

#: Every region a stop can outline, and the view it lies in (``view`` outlines the whole view).
REGIONS: dict[str, str | None] = {
    "view": None,
    "head-row": "head",
    "attribution-cross-row": "attribution",
    "walk-scores": "walkthrough",
    "walk-weights-row": "walkthrough",
    "walk-z": "walkthrough",
    "scaling-heatmaps": "scaling",
    "walk-concat": "walkthrough",
    "compare-difference": "compare",
    "residual-encoder": "residual",
    "norm-compare": "norm",
    "ffn-hidden": "ffn",
    "model-table": "model-info",
    "output-forced": "output",
    "output-topk": "output",
    "teacher-table": "teacher-vs-free",
    "mask-upper-triangle": "mask",
}

#: The views a stop can raise: those the tour can point into.
VIEWS: tuple[str, ...] = tuple(dict.fromkeys(v for v in REGIONS.values() if v is not None))


#: Each exercise kind (:mod:`attnviz.core.exercises` computes it) and the selection kind its stop
#: must have (``None``: any).
EXERCISE_KINDS: dict[str, str | None] = {
    "cross-argmax": "cross", "next-token": None, "pe-off-order": None, "mask-cells": "decoder",
    "important-head": None, "norm-batch": None, "scaling": None, "shape": None,
}
EXERCISE_HEADS = ("selected", "mean")  # cross-argmax: the selected head's row, or the layer's mean over heads
#: Keys that would write an exercise's answer into the file: refused with their own message.
ANSWER_KEYS = frozenset({"answer", "answers", "correct", "solution", "expected", "right", "key", "choices", "options", "value", "values"})


@dataclass(frozen=True)
class StopExercise:
    """A stop's exercise as the file gives it: its kind, its question (in the language read) and,
    for ``cross-argmax``, whose row it asks about (``heads``). Never its answer."""

    kind: str
    question: str
    heads: str = "selected"

    def options(self) -> tuple[tuple[str, str], ...]:
        """What the kind's function takes besides the question (name–value pairs)."""
        return (("heads", self.heads),) if self.kind == "cross-argmax" else ()


@dataclass(frozen=True)
class Labels:
    """The panel's own words in the file's language; ``counter`` has ``{n}`` and ``{total}``."""

    title: str
    back: str
    next: str
    leave: str
    counter: str
    waiting: str


@dataclass(frozen=True)
class StopState:
    """What a stop sets in the window. ``steps``: tokens decoded (teacher-forced: the 1-based
    position), ``None``: to the end. ``layer``, ``head``, ``query``: 0-based (``query`` ``None``:
    the current step's row)."""

    source: str
    target: str
    steps: int | None
    kind: str
    layer: int
    head: int
    query: int | None
    focus: tuple[str, ...] = ()


@dataclass(frozen=True)
class Stop:
    id: str
    title: str
    view: str
    state: StopState
    highlight: str
    text: str
    positional: tuple[str, ...] = POSITIONALS  # the positional schemes of the models the text describes
    exercise: StopExercise | None = None  # asked before the text and the view show

    def placeholders(self) -> tuple[str, ...]:
        """The measures its text quotes, in order of first use."""
        return tuple(dict.fromkeys(name for name, _ in fields_of(self.text)))


@dataclass(frozen=True)
class Tour:
    language: str
    path: Path
    labels: Labels
    stops: tuple[Stop, ...]
    model: str | None = None  # the model folder the tour names, as written (see model_folder)

    def ids(self) -> tuple[str, ...]:
        return tuple(s.id for s in self.stops)

    def index(self, stop_id: str) -> int:
        return self.ids().index(stop_id)


# -- reading ------------------------------------------------------------------------------------
def tour_path(language: str) -> Path:
    """The bundled tour file of ``language`` (one of :data:`LANGUAGES`)."""
    from attnviz.paths import resource

    if language not in LANGUAGES:
        raise TourError(f"no tour in {language!r} (one of {', '.join(LANGUAGES)})")
    return resource("tour", f"{language}.json")


def load_tour(language: str = "en") -> Tour:
    """The bundled tour of ``language``, checked."""
    return load_tour_file(tour_path(language))


def load_tour_file(path: str | Path, language: str | None = None, views: tuple[str, ...] = VIEWS, name: str | None = None) -> Tour:
    """The tour in ``path``, checked (:class:`TourError`, one line, for anything wrong): its texts
    in ``language`` where a stop has them in several (``None``: the file's), its stops' views of
    ``views``, and the model it names there and able to show every stop. ``name`` names the file
    in errors (default: its file name)."""
    path = Path(path)
    where = name or path.name
    tour = parse_tour(read_tour_json(path, where), path, language, views, where)
    if tour.model is not None:
        check_model(tour, where)
    return tour


def read_tour_json(path: Path, where: str) -> Any:
    """The JSON in ``path``: UTF-8, at most :data:`MAX_BYTES`; ``where`` names it in errors."""
    try:
        if path.stat().st_size > MAX_BYTES:
            raise TourError(f"{where}: too large for a tour file (over {MAX_BYTES // 1024} KiB)")
        return json.loads(path.read_bytes().decode("utf-8"))
    except OSError as exc:
        raise TourError(f"{where}: could not read the tour: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise TourError(f"{where}: not a tour file (not UTF-8 text)") from None
    except (json.JSONDecodeError, RecursionError) as exc:
        raise TourError(f"{where}: not a tour file (damaged JSON: {one_line(str(exc))})") from None
    except ValueError:  # an integer of more digits than Python reads
        raise TourError(f"{where}: not a tour file (damaged JSON: a number too long to read)") from None


#: The keys of a tour file: every one allowed, and those a file must give.
FILE_KEYS = {"format", "version", "language", "labels", "model", "stops", "attnviz-output"}
FILE_REQUIRED = {"format", "version", "stops"}


def parse_tour(raw: Any, path: Path, language: str | None = None, views: tuple[str, ...] = VIEWS, where: str | None = None) -> Tour:
    """The tour ``raw`` (parsed JSON) describes, in ``language`` (see :func:`load_tour_file`);
    ``where`` (default: ``path``'s name) names it in errors."""
    where = where or path.name
    obj = _object(raw, where, "the file")
    _keys(obj, FILE_KEYS, FILE_REQUIRED, where)
    _check_version(obj, where)
    written = _string(obj, "language", where, 10) if "language" in obj else "en"
    if written not in LANGUAGES:
        raise TourError(f"{where}: unknown language {written!r} (one of {', '.join(LANGUAGES)})")
    read = written if "language" in obj or language is None else language
    stops = obj["stops"]
    if not isinstance(stops, list) or not stops:
        raise TourError(f"{where}: 'stops' must be a non-empty list")
    parsed = tuple(parse_stop(s, f"{where}: stop {i + 1}", read, views) for i, s in enumerate(stops))
    _unique_ids(parsed, where)
    labels = _labels(obj["labels"], where) if "labels" in obj else default_labels(read)
    model = _string(obj, "model", where, MAX_MODEL) if "model" in obj else None
    return Tour(read, path, labels, parsed, model)


def _check_version(obj: dict, where: str) -> None:
    version = obj["version"]
    if obj["format"] != FORMAT:
        raise TourError(f"{where}: not an attnviz tour file")
    if type(version) is not int or version < 1:
        raise TourError(f"{where}: unknown tour format version {shown(version)} (this attnviz reads 1 to {VERSION})")
    if version > VERSION:
        raise TourError(f"{where}: a tour of a newer attnviz (format {version}; this one reads up to {VERSION})")


def default_labels(language: str) -> Labels:
    """The panel's words in ``language``: the bundled tour's."""
    path = tour_path(language)
    obj = _object(read_tour_json(path, path.name), path.name, "the file")
    return _labels(obj.get("labels"), path.name)


def _labels(raw: Any, where: str) -> Labels:
    names = ("title", "back", "next", "leave", "counter", "waiting")
    obj = _object(raw, where, "'labels'")
    _keys(obj, set(names), set(names), f"{where}: labels")
    labels = Labels(*(_string(obj, n, f"{where}: labels", MAX_TITLE) for n in names))
    if {n for n, _ in fields_of(labels.counter)} != {"n", "total"}:
        raise TourError(f"{where}: labels: 'counter' must hold {{n}} and {{total}}")
    return labels


def _unique_ids(stops: tuple[Stop, ...], where: str) -> None:
    seen: set[str] = set()
    for s in stops:
        if s.id in seen:
            raise TourError(f"{where}: stop {s.id!r}: the id is used twice")
        seen.add(s.id)


#: The keys of a stop: every one allowed, and those a stop must give.
STOP_KEYS = {"id", "title", "view", "state", "highlight", "text", "positional", "exercise"}
STOP_REQUIRED = {"view", "state", "text"}


def parse_stop(raw: Any, where: str, language: str = "en", views: tuple[str, ...] = VIEWS) -> Stop:
    """One stop, its title and text in ``language`` (when it has them in several); ``where``
    (``…: stop N``) names it in errors, with its id once known."""
    obj = _object(raw, where, "the stop")
    stop_id = obj.get("id", f"stop-{where.rsplit(' ', 1)[-1]}")
    if not isinstance(stop_id, str) or not _ID.match(stop_id):
        raise TourError(f"{where}: 'id' must be lower-case letters, digits and '-' (at most 40)")
    where = f"{where.rsplit(': stop', 1)[0]}: stop {stop_id!r}" if "id" in obj else where
    _keys(obj, STOP_KEYS, STOP_REQUIRED, where)
    view = _choice(obj, "view", views, where)
    highlight = _choice(obj, "highlight", tuple(REGIONS), where) if "highlight" in obj else "view"
    if REGIONS[highlight] not in (None, view):
        raise TourError(f"{where}: the region {highlight!r} lies in the {REGIONS[highlight]} view, not in {view}")
    texts = _texts(obj, "text", where, MAX_TEXT)
    title = _texts(obj, "title", where, MAX_TITLE) if "title" in obj else {}
    state = _state(obj["state"], where)
    exercise = parse_exercise(obj["exercise"], state, f"{where}: exercise", language) if "exercise" in obj else None
    stop = Stop(stop_id, _in_language(title, language), view, state, highlight,
                _in_language(texts, language), _positional(obj, where), exercise)
    for text in texts.values():
        check_text(replace(stop, text=text), where)
    return stop


def parse_exercise(raw: Any, state: StopState, where: str, language: str = "en") -> StopExercise:
    """A stop's exercise: its kind, its question (in ``language``, see :func:`_in_language`) and
    its options; one that gives an answer, or does not fit the stop's selection, is refused."""
    obj = _object(raw, where, "'exercise'")
    given = sorted(ANSWER_KEYS & set(obj))
    if given:
        raise TourError(f"{where}: it gives an answer ({given[0]!r}): an exercise's answer is computed from the live model, never written in the tour")
    number = next((k for k, v in obj.items() if isinstance(v, (int, float)) and not isinstance(v, bool)), None)
    if number is not None:
        raise TourError(f"{where}: {number!r} is a number to match: an exercise's answer is computed from the live model, never written in the tour")
    _keys(obj, {"kind", "question", "heads"}, {"kind", "question"}, where)
    kind = _choice(obj, "kind", tuple(EXERCISE_KINDS), where)
    needs = EXERCISE_KINDS[kind]
    if needs is not None and state.kind != needs:
        raise TourError(f"{where}: a {kind} exercise asks about {needs} attention, but the stop selects {state.kind}")
    if "heads" in obj and kind != "cross-argmax":
        raise TourError(f"{where}: 'heads' is an option of cross-argmax exercises, not of {kind}")
    heads = _choice(obj, "heads", EXERCISE_HEADS, where) if "heads" in obj else "selected"
    questions = _texts(obj, "question", where, MAX_TEXT)
    for text in questions.values():
        if "{" in text or "}" in text:
            raise TourError(f"{where}: the question quotes a measure: it is asked before the view shows, so it quotes none")
        found = _DECIMAL.search(text)
        if found:
            raise TourError(f"{where}: the question writes a number ({found.group(0)}…) by hand: the live model gives every number")
    return StopExercise(kind, _in_language(questions, language), heads)


def _texts(obj: dict, key: str, where: str, limit: int) -> dict[str, str]:
    """A text given as a string (in the file's language: key ``""``) or per language
    (``{"en": …, "zh_CN": …}``): the non-empty ones; at least one."""
    value = obj[key]
    if isinstance(value, str):
        value = {"": value}
    elif not isinstance(value, dict):
        raise TourError(f"{where}: {key!r} must be a string or an object of texts by language ({', '.join(LANGUAGES)})")
    for lang, text in value.items():
        if lang and lang not in LANGUAGES:
            raise TourError(f"{where}: {key!r}: unknown language {lang!r} (one of {', '.join(LANGUAGES)})")
        if not isinstance(text, str):
            raise TourError(f"{where}: {key!r}{f' in {lang}' if lang else ''} must be a string")
        if len(text) > limit:
            raise TourError(f"{where}: {key!r}{f' in {lang}' if lang else ''} is longer than {limit} characters ({len(text)})")
    found = {lang: text for lang, text in value.items() if text.strip()}
    if not found:
        raise TourError(f"{where}: {key!r} is empty: the stop has no {key} in any language")
    return found


def _in_language(texts: dict[str, str], language: str) -> str:
    """The text in ``language``, else the one in the file's language, else the first ("": none)."""
    for lang in (language, "", *LANGUAGES):
        if lang in texts:
            return texts[lang]
    return ""


def _state(raw: Any, where: str) -> StopState:
    obj = _object(raw, where, "'state'")
    _keys(obj, {"source", "target", "steps", "selection", "focus"}, {"source", "steps", "selection"}, f"{where}: state")
    steps = obj["steps"]
    if steps != "end" and not (type(steps) is int and steps >= 0):
        raise TourError(f"{where}: state: 'steps' must be a count of tokens (0 or more) or \"end\"")
    if steps != "end" and steps > MAX_STEPS:
        raise TourError(f"{where}: state: 'steps' {steps} is out of range (0 to {MAX_STEPS}, or \"end\")")
    target = _string(obj, "target", f"{where}: state", MAX_SOURCE, empty=True) if "target" in obj else ""
    focus = obj.get("focus", [])
    if not isinstance(focus, list) or not all(isinstance(w, str) and w.strip() for w in focus):
        raise TourError(f"{where}: state: 'focus' must be a list of words")
    kind, layer, head, query = _selection(obj["selection"], where)
    return StopState(_string(obj, "source", f"{where}: state", MAX_SOURCE), target, None if steps == "end" else steps,
                     kind, layer, head, query, tuple(focus))


def _positional(obj: dict, where: str) -> tuple[str, ...]:
    """The stop's ``positional`` schemes (all of them where the key is absent)."""
    if "positional" not in obj:
        return POSITIONALS
    value = obj["positional"]
    if not isinstance(value, list) or not value or not all(v in POSITIONALS for v in value):
        raise TourError(f"{where}: 'positional' must be a non-empty list of {', '.join(POSITIONALS)}")
    return tuple(dict.fromkeys(value))


def _selection(raw: Any, where: str) -> tuple[str, int, int, int | None]:
    where = f"{where}: selection"
    obj = _object(raw, where, "'selection'")
    _keys(obj, {"kind", "layer", "head", "query"}, {"kind", "layer", "head"}, where)
    kind = _choice(obj, "kind", KINDS, where)
    numbers = []
    for name in ("layer", "head", "query"):
        value = obj.get(name)
        if value is None and name == "query":
            numbers.append(None)
        elif type(value) is int and value >= 1:
            numbers.append(value - 1)
        else:
            raise TourError(f"{where}: {name!r} must be a number from 1 (as on screen)" + (" or null" if name == "query" else ""))
    return kind, numbers[0], numbers[1], numbers[2]


def check_text(stop: Stop, where: str) -> None:
    """Every placeholder of the text names a measure of the stop's view (or of the model) with a
    format spec that fits it; no number is written into the text by hand."""
    for name, spec in fields_of(stop.text, where):
        measure = MEASURES.get(name)
        if measure is None:
            raise TourError(f"{where}: unknown measure {{{name}}} in the text")
        if measure.view not in (None, stop.view):
            raise TourError(f"{where}: the measure {{{name}}} reads the {measure.view} view, but the stop shows {stop.view}")
        try:
            format(_SAMPLES[measure.kind], spec)
        except ValueError:
            article = "an" if measure.kind == "integer" else "a"
            raise TourError(f"{where}: the format {{{name}:{spec}}} does not fit {article} {measure.kind}") from None
    literal = "".join(part for part, _, _, _ in string.Formatter().parse(stop.text))
    found = _DECIMAL.search(literal)
    if found:
        raise TourError(f"{where}: the text writes a number ({found.group(0)}…) by hand: quote it through a measure")


def fields_of(text: str, where: str = "") -> list[tuple[str, str]]:
    """``(name, format spec)`` of each placeholder of ``text``: plain names only (no ``!r``, no
    ``.attr``/``[i]``, no nested fields); :class:`TourError` otherwise."""
    out = []
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError as exc:
        raise TourError(f"{where}: the text's braces do not pair up ({exc}); write a brace as {{{{ or }}}}") from None
    for _, name, spec, conversion in parsed:
        if name is None:
            continue
        if not name.isidentifier() or conversion or "{" in (spec or ""):
            raise TourError(f"{where}: the placeholder {{{name}}} must be a plain measure name with an optional format")
        out.append((name, spec or ""))
    return out


def fill(text: str, values: dict[str, object], missing: str = "—") -> str:
    """``text`` with its placeholders filled from ``values``; a value that is ``None`` (or not
    there) is written as ``missing``."""
    out = []
    for literal, name, spec, _ in string.Formatter().parse(text):
        out.append(literal)
        if name is not None:
            value = values.get(name)
            out.append(missing if value is None else format(value, spec or ""))
    return "".join(out)


def check_same_tour(first: Tour, other: Tour) -> None:
    """``other`` (a translation) has ``first``'s stops in the same order, each with the same view,
    state, region and measures: only titles and texts differ."""
    where = other.path.name
    if first.ids() != other.ids():
        missing = [i for i in first.ids() if i not in other.ids()]
        extra = [i for i in other.ids() if i not in first.ids()]
        what = f"lacks {missing}" if missing else f"has {extra} too" if extra else "has them in another order"
        raise TourError(f"{where}: its stops differ from {first.path.name}'s: it {what}")
    for a, b in zip(first.stops, other.stops):
        for name in ("view", "state", "highlight", "positional"):
            if getattr(a, name) != getattr(b, name):
                raise TourError(f"{where}: stop {b.id!r}: its {name} differs from {first.path.name}'s")
        if _asks(a) != _asks(b):
            raise TourError(f"{where}: stop {b.id!r}: its exercise differs from {first.path.name}'s")
        if set(a.placeholders()) != set(b.placeholders()):
            raise TourError(f"{where}: stop {b.id!r}: it quotes {sorted(b.placeholders())}, {first.path.name} {sorted(a.placeholders())}")


def _asks(stop: Stop) -> tuple | None:
    """What a stop's exercise asks, whatever its language: its kind and options (``None``: none)."""
    return None if stop.exercise is None else (stop.exercise.kind, stop.exercise.options())


# -- the model a stop explains -------------------------------------------------------------------
#: Each positional scheme (``TransformerConfig.positional``) in a sentence's words.
POSITIONAL_WORDS = {
    "sinusoidal": "sinusoidal positional encoding added to its embeddings",
    "learned": "learned positions (a table of position vectors added to its embeddings)",
    "relative": "relative position biases on its attention scores (nothing added to its embeddings)",
}


def stop_misfit(stop: Stop, config: TransformerConfig) -> tuple[str, tuple[str, ...]] | None:
    """Why ``stop`` does not apply to a model of ``config`` (``None``: it does), as words to put in
    a sentence: ``("kind", (kind,))`` — the stop shows attention of a kind the model has no layers
    of — or ``("positional", (the model's scheme, *the schemes the stop's text describes))``."""
    if not n_layers(config, stop.state.kind):
        return "kind", (stop.state.kind,)
    if config.positional not in stop.positional:
        return "positional", (config.positional, *stop.positional)
    return None


def stop_mismatch(stop: Stop, config: TransformerConfig) -> str | None:
    """:func:`stop_misfit` in one English line (the command line's; the window says it in its language)."""
    misfit = stop_misfit(stop, config)
    if misfit is None:
        return None
    what, words = misfit
    if what == "kind":
        return f"the stop {stop.id!r} shows {words[0]} attention, and this {config.kind} model has no {words[0]} layers"
    described = " or ".join(POSITIONAL_WORDS[p] for p in words[1:])
    return f"the stop {stop.id!r} explains {described}; this model has {POSITIONAL_WORDS[words[0]]}"


# -- the model a tour names ------------------------------------------------------------------------
def model_folder(name: str) -> Path:
    """The folder a tour's ``model`` names: an absolute path as it is, else a folder of ``models/``."""
    from attnviz.paths import models_dir

    path = Path(name)
    return path if path.is_absolute() else models_dir() / path


def model_name(folder: str | Path) -> str:
    """What a tour writes for the model in ``folder``: its name in ``models/``, else its absolute path."""
    from attnviz.paths import models_dir

    folder = Path(folder).absolute()
    inside = folder.parent == models_dir().absolute()
    return folder.name if inside else str(folder)


def check_model(tour: Tour, where: str) -> None:
    """The model ``tour`` names is there and can show every stop: its kind of attention, a layer
    and head it has, no more steps than it decodes (:class:`TourError`, one line, otherwise)."""
    from attnviz.core.bundle import CONFIG, BundleError, read_config

    folder = model_folder(tour.model)
    if not (folder / CONFIG).is_file():
        raise TourError(f"{where}: this tour names the model {tour.model}, which is not here ({folder} holds no model)")
    try:
        config = read_config(folder / CONFIG)
    except BundleError as exc:
        raise TourError(f"{where}: the tour's model {tour.model} cannot be read: {one_line(str(exc))}") from None
    for i, stop in enumerate(tour.stops):
        why = stop_mismatch(stop, config) or out_of_range(stop, config, tour.model)
        if why is not None:
            raise TourError(f"{where}: stop {i + 1}: {why}")


def out_of_range(stop: Stop, config: TransformerConfig, model: str) -> str | None:
    """Why ``stop`` asks for more than a model of ``config`` has (``None``: it does not)."""
    st = stop.state
    layers = n_layers(config, st.kind)
    if st.layer >= layers:
        return f"layer {st.layer + 1} is out of range: the model {model} has {layers} {st.kind} layers"
    if st.head >= config.n_heads:
        return f"head {st.head + 1} is out of range: the model {model} has {config.n_heads} heads"
    if st.steps is not None and st.steps > config.max_len:
        return f"step {st.steps} is out of range: the model {model} decodes at most {config.max_len} tokens"
    return None


# -- small checks ---------------------------------------------------------------------------------
def _object(raw: Any, where: str, what: str) -> dict:
    if not isinstance(raw, dict):
        raise TourError(f"{where}: {what} must be a JSON object")
    return raw


def _keys(obj: dict, allowed: set[str], required: set[str], where: str) -> None:
    unknown = sorted(set(obj) - allowed)
    if unknown:
        raise TourError(f"{where}: unknown key {unknown[0]!r} (one of {', '.join(sorted(allowed))})")
    missing = sorted(required - set(obj))
    if missing:
        raise TourError(f"{where}: missing key {missing[0]!r}")


def _string(obj: dict, key: str, where: str, limit: int, empty: bool = False) -> str:
    value = obj.get(key)
    if not isinstance(value, str) or (not empty and not value.strip()):
        raise TourError(f"{where}: {key!r} must be a{'' if empty else ' non-empty'} string")
    if len(value) > limit:
        raise TourError(f"{where}: {key!r} is longer than {limit} characters")
    return value


def _choice(obj: dict, key: str, choices: tuple[str, ...], where: str) -> str:
    value = obj.get(key)
    if value not in choices:
        raise TourError(f"{where}: unknown {key} {value!r} (one of {', '.join(choices)})")
    return value
