"""The Train panel in 简体中文, beyond what the window walk (test_i18n) sees of an idle panel: the
run's states and messages, the warm-up note, the snapshot bar's caption, the probe's title and the
norm sites are Chinese, while the form still asks for the same run (its choices are keys)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from test_i18n import english_words, widget_texts

from attnviz.qt.train.history import site_label
from attnviz.qt.train.panel import TrainPanel
from attnviz.qt.train.run import TrainRequest


@pytest.fixture
def panel(qtbot, chinese):
    p = TrainPanel()
    qtbot.addWidget(p)
    return p


def test_the_form_is_chinese_and_asks_for_the_same_run(panel):
    bad = [(where, text) for where, text in widget_texts(panel) if english_words(text, set())]
    assert not bad, bad
    form = panel.controls
    assert form.start_button.text() == "开始" and form.size_combo.currentText().startswith("基础 · d_model 128")
    req = form.request()
    assert (req.data, req.size, req.norm, req.placement) == ("hsk-zh-en", "base", "layer", "pre")
    assert req.describe() == "hsk-zh-en + CC-CEDICT + word and role swaps · base · LayerNorm (pre-norm) · 30 epochs"  # meta.json's record stays English: data, not UI text
    assert req.summary() == "hsk-zh-en + CC-CEDICT + 换词与角色互换造句 · 基础 · LayerNorm（前置归一化）· 30 轮"


def test_states_and_messages_are_chinese(panel, tmp_path):
    assert panel.status.state_label.text() == "就绪"
    f = tmp_path / "file"
    f.write_text("x")
    assert not panel.start(TrainRequest(out_dir=str(f)))
    assert panel.error_text() == f"{f} 是文件而不是文件夹。请为模型包选择一个文件夹。"
    panel.controls.show_warmup(40, 400)
    assert panel.controls.warmup_note.text() == "→ 共 400 步中的 40 步"
    panel.controls.append_log("warning", "x")
    assert panel.controls.log.toPlainText().endswith("  警告：x")


def test_snapshots_and_norm_sites_are_chinese(panel):
    probe = SimpleNamespace(cross_attention={0: np.full((2, 1, 3), 1 / 3)}, out_pieces=("EOS",), src_pieces=("猫", "吃", "鱼"),
                            source="猫吃鱼", hypothesis="")
    panel.history.add_eval(SimpleNamespace(step=5, epoch=0, metrics={}, probes=[probe]), {"decoder.layers.1.norm2": {"token_std": 1.0, "token_abs_mean": 0.5}})
    panel.snapshot_bar.refresh()
    assert panel.snapshot_bar.scrub_label.text() == "快照：第 1 轮，共 1 个"
    assert panel.figure.probe_title.plain_text() == "探针句 · 第 1 轮 — 交叉注意力第 1 层：猫吃鱼 → （尚无输出）"
    assert site_label("decoder.layers.1.norm2") == "解码器第 2 层 · norm2" and site_label("encoder.norm") == "编码器 · norm"
    assert panel.history.norm_curves("decoder.layers.1.norm2")[3] == ("词元的标准差", "词元的 |均值|")
    assert panel.snapshot_bar.norm_site.currentText() == "解码器第 2 层 · norm2"
