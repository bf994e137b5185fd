"""The model-info view: every number against the config and the weights counted here, the
parameters per part summing to the model's, the kind of a model without encoder or decoder
layers, and the data and licence the bundle records."""

from __future__ import annotations

import dataclasses

import pytest
from PySide6 import QtWidgets

from attnviz.core.analysis.model_info import PARTS, model_info, model_kind, parameters_per_part
from attnviz.core.bundle import load_bundle
from attnviz.core.model.transformer import Transformer
from attnviz.paths import default_model
from attnviz.qt.views.model_info import QtModelInfoView, row_texts

from story_helpers import shown
from tiny_models import random_model


@pytest.fixture(scope="module")
def default():
    return load_bundle(default_model())


def test_the_table_and_the_bars_say_what_the_model_is(make_view, default):
    info = model_info(default)
    view = shown(make_view, QtModelInfoView, info)
    table = view.findChild(QtWidgets.QTableWidget, "modelInfoTable")
    shown_rows = {table.item(r, 0).text(): table.item(r, 1).text() for r in range(table.rowCount())}
    cfg = default.config
    assert shown_rows["d_k = d_v"] == f"{cfg.d_model // cfg.n_heads} (d_model / h)" and cfg.d_k == cfg.d_model // cfg.n_heads
    rows = {row.key: row for row in info.rows}  # the core's rows: a sinusoidal PE has no table, so nothing to fill in
    assert shown_rows["scores"] == "softmax(QKᵀ/√d_k + M)" and shown_rows["positions"] == row_texts(rows["positions"])[1]
    assert rows["positions"].values == {} and "PE(pos, 2i)" in shown_rows["positions"] and cfg.positional == "sinusoidal"
    assert shown_rows["kind"] == "encoder-decoder" and shown_rows["heads h"] == str(cfg.n_heads)
    assert shown_rows["parameters"] == f"{sum(p.numel() for p in default.model.parameters()):,}"
    assert shown_rows["licence"] == default.meta["data"]["licence"]
    enc_layers = sum(p.numel() for layer in default.model.encoder.layers for p in layer.parameters())
    assert info.parameters["encoder layers"] >= enc_layers  # the core's part names: data, not UI text
    assert info.parameters["source embedding"] == default.model.encoder.embed.table.weight.numel()  # data, not UI text
    data = view.figure_data()
    assert list(data.values["parameters"]) == [info.parameters[p] for p in PARTS]


def test_a_shared_matrix_counts_once():
    model = random_model(tie_embeddings=True)
    parts = parameters_per_part(model)
    assert sum(parts.values()) == sum(p.numel() for p in model.parameters())  # parameters() yields a shared one once
    bias = model.generator.bias
    assert parts["output layer"] == (0 if bias is None else bias.numel())  # its matrix is the target embedding's; data, not UI text


@pytest.mark.parametrize("enc,dec,word", [(2, 0, "encoder-only"), (0, 2, "decoder-only"), (2, 2, "encoder-decoder")])
def test_the_kind_follows_the_layers(enc, dec, word):
    model = Transformer(dataclasses.replace(random_model().config, n_encoder_layers=enc, n_decoder_layers=dec))
    assert model_kind(model.config.n_encoder_layers, model.config.n_decoder_layers).startswith(word)


def test_the_table_follows_the_language_and_the_data_file_stays_english(make_view, default):
    """In zh_CN each property and its value's template are translated, then filled with the
    model's numbers; the data file keeps the core's English."""
    from attnviz.qt.i18n import install, translate

    cfg = default.config
    install("zh_CN")
    try:
        view = shown(make_view, QtModelInfoView, model_info(default))
        table = view.findChild(QtWidgets.QTableWidget, "modelInfoTable")
        rows = {table.item(r, 0).text(): table.item(r, 1).text() for r in range(table.rowCount())}
        layers = translate("model_info", "{encoder} encoder + {decoder} decoder")
        assert translate("model_info", "layers") != "layers" and layers != "{encoder} encoder + {decoder} decoder"
        assert rows[translate("model_info", "layers")] == layers.format(encoder=cfg.n_encoder_layers, decoder=cfg.n_decoder_layers)
        assert rows[translate("model_info", "kind")] == translate("model_info", "encoder-decoder")
    finally:
        install("en")
    extras = view.figure_data().extras
    assert list(extras["property"][:2]) == ["kind", "layers"]
    assert list(extras["value"][:2]) == ["encoder-decoder", f"{cfg.n_encoder_layers} encoder + {cfg.n_decoder_layers} decoder"]
