"""The app's Session on long inputs: a sentence longer than the open model's position table is cut
there and the message says so; the encoder's attention is built once per sentence, not at every
step, and a rollout is computed only when asked for."""

from __future__ import annotations

import numpy as np

from attnviz.core.analysis.rollout import decoder_rollout, rollout
from attnviz.core.bundle import Bundle
from attnviz.qt.session import Session

from tiny_models import random_model, tokenizers

UNIT = "我是学生。"


def session_of(max_len: int, qtbot) -> Session:
    src, tgt = tokenizers()
    s = Session()
    s.decode_as_you_type = False
    s.set_bundle(Bundle(random_model(max_len=max_len), src, tgt))
    return s


def test_the_message_names_the_position_table(qtbot):
    s = session_of(40, qtbot)
    src, _ = tokenizers()
    text = UNIT * 20
    messages = []
    s.message.connect(lambda level, text: messages.append((level, text)))
    s.set_inputs(text, "")
    n = len(src.encode(text))
    assert messages == [("info", f"source truncated to 40 of {n} tokens: the model's position table holds 40 positions")]  # the core's notice; data, not UI text
    assert len(s.src_pieces()) == 40
    s.deleteLater()


def test_encoder_data_is_built_once_per_sentence_and_rollouts_when_asked(qtbot):
    s = session_of(600, qtbot)
    s.set_inputs(UNIT * 40, "")
    assert len(s.src_pieces()) > 128
    s.step()
    encoder, cross = s.frames.attention_data("encoder"), s.frames.attention_data("cross")
    assert encoder.has_rollout and callable(encoder.rollout) and callable(cross.rollout)  # not computed yet
    s.step()
    assert s.frames.attention_data("encoder") is encoder and s.frames.builds["attention:encoder"] == 1
    cross2 = s.frames.attention_data("cross")
    enc_roll = rollout(encoder.weights)
    np.testing.assert_allclose(encoder.rollout_matrix(), enc_roll, rtol=1e-5, atol=1e-7)
    expected = decoder_rollout(s.frames.attention_data("decoder").weights, cross2.weights, enc_roll)["source_normalized"]
    np.testing.assert_allclose(cross2.rollout_matrix(), expected, rtol=1e-4, atol=1e-6)
    assert cross.rollout_matrix().shape == (1, len(s.src_pieces()))  # the earlier frame's rows, computed now
    s.set_inputs(UNIT * 3, "")
    s.step()
    assert s.frames.attention_data("encoder") is not encoder and s.frames.builds["attention:encoder"] == 2
    s.deleteLater()
