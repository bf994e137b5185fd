"""``make readme-numbers`` (``bench/readme_numbers.py``): its cheap sections run on a bundled model
other than the default, and what they print equals the same figures computed here another way."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path

import pytest
import torch

from attnviz.core.bundle import load_bundle
from attnviz.core.training.evaluation import greedy_translate
from attnviz.paths import models_dir

SCRIPT = Path(__file__).resolve().parents[1] / "bench" / "readme_numbers.py"
MODEL = models_dir() / "zh-en-small"
SECTIONS = ("head-importance", "model-info", "animate")


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("readme_numbers", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(spec.name, None)


@pytest.fixture(scope="module")
def printed(script, tmp_path_factory):
    """The sections' rows, ``{section: {what: value}}``, as ``--json`` writes them."""
    out = tmp_path_factory.mktemp("readme-numbers") / "numbers.json"
    assert script.main(["--model", str(MODEL), "--only", ",".join(SECTIONS), "--json", str(out)]) == 0
    results = json.loads(out.read_text(encoding="utf-8"))
    assert results["model"] == str(MODEL) and list(results["sections"]) == list(SECTIONS)  # the README's order
    return {name: dict(map(tuple, s["rows"])) for name, s in results["sections"].items()}


@pytest.fixture(scope="module")
def bundle():
    return load_bundle(MODEL)


def test_the_parameter_count_is_the_model_s_tensors_counted_once(printed, bundle):
    total = sum(p.numel() for p in bundle.model.parameters())  # a tied tensor once
    assert printed["model-info"]["parameters"] == f"{total:,}"
    parts = {k: int(v.replace(",", "")) for k, v in printed["model-info"].items() if k != "parameters"}
    assert sum(parts.values()) == total


def test_the_greedy_translation_is_greedy_translate_s(printed, bundle):
    (text,) = greedy_translate(bundle.model, bundle.src_tokenizer, bundle.tgt_tokenizer, ["猫吃鱼。"])
    n = len(bundle.tgt_tokenizer.encode(text)) + 1  # and EOS
    assert printed["animate"]["猫吃鱼。 decoded"] == f"{text!r}, {n} steps"


def test_the_log_p_of_the_greedy_output_is_one_forward_pass_s(printed, bundle):
    (text,) = greedy_translate(bundle.model, bundle.src_tokenizer, bundle.tgt_tokenizer, ["猫吃鱼。"])
    cfg, out = bundle.config, [*bundle.tgt_tokenizer.encode(text), bundle.config.eos_id]
    with torch.inference_mode():
        logits = bundle.model(torch.tensor([bundle.src_tokenizer.encode("猫吃鱼。")]), torch.tensor([[cfg.bos_id, *out[:-1]]]))[0]
    log_p = float(torch.log_softmax(logits.double(), -1)[torch.arange(len(out)), torch.tensor(out)].sum())
    assert printed["head-importance"][f"log P of {text!r}"] == f"{log_p:.2f} nats".replace("-", "\u2212")
    assert printed["head-importance"]["heads"] == str(3 * 3 * cfg.n_heads)
    assert not math.isnan(log_p)


def test_an_unknown_section_is_named_in_one_line(script):
    with pytest.raises(SystemExit, match="no section 'nope'"):
        script.main(["--only", "nope"])
