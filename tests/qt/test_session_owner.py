"""The session owns its state: no module but ``qt/session.py`` writes a field of the ``Session``
or emits one of its signals; every move goes through the session's own methods. Read from the
source (every module of the package), so a new write anywhere fails here."""

from __future__ import annotations

import ast
from pathlib import Path

import attnviz
from attnviz.core.decoding.session import DecodingSession
from attnviz.qt.session import Session

import inside_fixtures as F

PACKAGE = Path(attnviz.__file__).parent
OWNER = PACKAGE / "qt" / "session.py"
SIGNALS = {name for name in dir(Session) if type(getattr(Session, name)).__name__ == "Signal"}


def _is_session(node: ast.AST, aliases: set[str]) -> bool:
    """``session``, ``x.session``, ``self.window.session`` or a local name bound to one of them."""
    if isinstance(node, ast.Name):
        return node.id == "session" or node.id in aliases
    return isinstance(node, ast.Attribute) and node.attr == "session"


def _aliases(func: ast.AST) -> set[str]:
    """Names a function binds to a session (``s = self.session``, ``w, s = w, w.session``)."""
    found: set[str] = set()
    for node in ast.walk(func):
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            pairs = zip(target.elts, node.value.elts) if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple) else [(target, node.value)]
            found |= {t.id for t, v in pairs if isinstance(t, ast.Name) and _is_session(v, set())}
    return found


def _written(node: ast.AST) -> list[ast.Attribute]:
    if isinstance(node, ast.Assign):
        targets = [e for t in node.targets for e in (t.elts if isinstance(t, ast.Tuple) else [t])]
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        targets = [node.target]
    else:
        return []
    return [t for t in targets if isinstance(t, ast.Attribute)]


def offences(tree: ast.AST) -> list[str]:
    """Each write of a session field and each emit of a session signal in ``tree``, as 'line: what'."""
    found = []
    for func in [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))]:
        aliases = _aliases(func)
        for node in ast.walk(func):
            found += [f"{t.lineno}: writes session.{t.attr}" for t in _written(node) if _is_session(t.value, aliases)]
            call = node.func if isinstance(node, ast.Call) else None
            if (isinstance(call, ast.Attribute) and call.attr == "emit" and isinstance(call.value, ast.Attribute)
                    and call.value.attr in SIGNALS and _is_session(call.value.value, aliases)):
                found.append(f"{node.lineno}: emits session.{call.value.attr}")
    return sorted(set(found))


def test_no_module_but_the_session_writes_its_fields_or_emits_its_signals():
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if path != OWNER:
            hits = offences(ast.parse(path.read_text(encoding="utf-8")))
            if hits:
                found[str(path.relative_to(PACKAGE))] = hits
    assert not found, found


def test_the_check_finds_each_kind_of_offence():
    source = '''
def f(window, session):
    s = window.session
    w, t = window, window.session
    session.strategy = 1
    s.forced_cursor += 1
    t.source, t.target = "a", "b"
    window.session.decodingChanged.emit()
    s.message.emit("warning", "x")
    session.set_inputs("a", "")  # a move of its own: fine
    other.decodingChanged.emit()  # not a session
'''
    assert offences(ast.parse(source)) == sorted(["5: writes session.strategy", "6: writes session.forced_cursor",  # data, not UI text
                                                  "7: writes session.source", "7: writes session.target",
                                                  "8: emits session.decodingChanged", "9: emits session.message"])


# -- the moves other modules make, through the session ------------------------------------------
def _counted(session: Session) -> list[int]:
    seen = []
    session.decodingChanged.connect(lambda: seen.append(1))
    return seen


def test_go_to_decodes_that_many_steps_with_one_signal(qapp):
    s = Session()
    s.set_decode_as_you_type(False)
    s.set_bundle(F.bundle())
    s.set_inputs("我喜欢吃苹果。", "")
    by_hand = DecodingSession.from_bundle(F.bundle(), "我喜欢吃苹果。")
    by_hand.step(), by_hand.step(), by_hand.step()
    seen = _counted(s)
    assert s.go_to(3) is None and len(seen) == 1
    assert s.decoding.tgt_ids == by_hand.tgt_ids
    assert s.go_to(3) is None and len(seen) == 1  # already there: nothing moves, nothing emitted
    s.go_to(None)
    assert s.decoding.finished and len(seen) == 2
    tokens = list(s.decoding.tgt_ids[1:])
    s.go_to(0)
    s.step(), s.force(tokens[1])  # a forced step, as a session file saves it
    saved = s.decoding.tgt_ids
    s.go_to(0)
    before = len(seen)
    assert s.replay(list(saved[1:]), [1]) is None and s.decoding.tgt_ids == saved and len(seen) == before + 1
    assert [st.forced for st in s.decoding.steps] == [False, True]
    s.deleteLater()


def test_the_cursor_moves_within_the_target_with_one_signal(qapp):
    s = Session()
    s.set_bundle(F.bundle())
    s.set_inputs("我喜欢吃苹果。", "I like apples.")
    s.finish_runs()  # the pass runs in a worker
    n = len(s.forced.steps)
    seen = _counted(s)
    s.set_cursor(1)
    s.set_cursor(1)
    assert s.forced_cursor == 1 and len(seen) == 1
    s.set_cursor(99)
    assert s.forced_cursor == n - 1 and len(seen) == 2  # clamped to the target
    s.go_to(1)
    assert s.forced_cursor == 0 and len(seen) == 3  # go_to counts 1-based positions
    assert s.replay([], cursor=2) is None and s.forced_cursor == 2
    s.deleteLater()


def test_apply_is_one_change_and_equals_the_moves_made_one_by_one(qapp):
    by_hand = Session()
    by_hand.set_decode_as_you_type(False)
    by_hand.set_bundle(F.bundle())
    by_hand.set_inputs("我喜欢吃苹果。", "")
    by_hand.go_to(3)
    s = Session()
    s.set_decode_as_you_type(False)
    s.set_bundle(F.bundle())
    seen = _counted(s)
    assert s.apply("我喜欢吃苹果。", "", steps=3) is None
    assert len(seen) == 1 and s.decoding.tgt_ids == by_hand.decoding.tgt_ids and len(s.decoding.steps) == 3
    tokens = list(by_hand.decoding.tgt_ids[1:])
    assert s.apply("我喜欢吃苹果。", "", tokens=tokens[:2], forced=[1]) is None  # a saved position again
    assert len(seen) == 2 and s.decoding.tgt_ids == by_hand.decoding.tgt_ids[:3]
    assert [st.forced for st in s.decoding.steps] == [False, True]
    s.apply("我喜欢吃苹果。", "I like apples.", cursor=1)  # teacher-forced: the pass runs in a worker, the cursor waits for it
    assert len(seen) == 2 and s.forced is None and s.pending
    s.finish_runs()
    assert len(seen) == 3 and s.forced is not None and s.forced_cursor == 1 and not s.pending
    with s.one_change():  # moves inside reach the views once; nested, still once
        s.set_cursor(0)
        with s.one_change():
            s.set_cursor(2)
        assert len(seen) == 3
    assert len(seen) == 4 and s.forced_cursor == 2
    s.deleteLater(), by_hand.deleteLater()
