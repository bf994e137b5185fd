"""Numbers no command can honour are refused in one line, before anything is loaded or allocated:
the decoding strategies' parameters (their ranges in ``decoding.strategies``), ``attribute
--steps``, ``evaluate --threads``, training options of hundreds of digits; and a ``config.json``
holding an integer too large for a float (our bundles and every Hugging Face family)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from tiny_families import build_bart, build_bert, build_gpt2, build_t5
from tiny_marian import build_marian

from attnviz.cli import main
from attnviz.core.bundle import load_bundle
from attnviz.core.decoding.strategies import BEAM_WIDTH, LENGTH_PENALTY, SEED, TEMPERATURE, TOP_K, TOP_P, BeamSearch, DecodingError, Sampling
from attnviz.errors import AttnvizError

ROOT = Path(__file__).resolve().parents[2]
HUGE = 10**400  # more than a float holds
TOO_MANY = str(2**70)


@pytest.fixture
def nothing_loaded(monkeypatch):
    """A command that reaches for a model fails the test: the check comes first."""

    def refuse(*args, **kwargs):
        raise AssertionError("the model was loaded before the options were checked")

    monkeypatch.setattr("attnviz.core.bundle.load_bundle", refuse)


def one_line_error(capsys, argv: list[str], code: int | None = 2) -> str:
    """Run the command line: its exit code (``code``, or any failure for ``None``) and its one line on stderr."""
    got = main(argv)
    assert got == code if code is not None else got != 0
    err = capsys.readouterr().err.strip()
    assert err.startswith("attnviz: error:") and "\n" not in err and "Traceback" not in err, err
    return err


# -- the strategies' ranges ---------------------------------------------------------------------------
@pytest.mark.parametrize("options, words", [
    (["--beam", "1000000"], "beam width must be an integer in [1, 64], not 1000000"),
    (["--beam", "1180591620717411303424"], "beam width must be an integer in [1, 64]"),
    (["--beam", "0"], "beam width must be an integer in [1, 64], not 0"),
    (["--sample", "--temperature", "1e400"], "temperature must be a finite number in [0.01, 100], not inf"),
    (["--sample", "--temperature", "0.001"], "temperature must be a finite number in [0.01, 100]"),
    (["--sample", "--top-k", str(10**30)], "top-k (0: no limit) must be an integer in [0, 1,048,576]"),
    (["--sample", "--top-p", "1.5"], "top-p (1: no limit) must be a finite number in (0, 1]"),
])
def test_translate_refuses_a_strategy_out_of_range_before_loading_the_model(capsys, nothing_loaded, options, words):
    assert words in one_line_error(capsys, ["translate", *options, "我爱你。"])


def test_trace_refuses_a_beam_too_wide_in_one_line(capsys, nothing_loaded):
    err = one_line_error(capsys, ["trace", "--src", "我", "--strategy", "beam:100000", "--json"], code=None)
    assert "beam width must be an integer in [1, 64], not 100000" in err


@pytest.mark.parametrize("make, words", [
    (lambda: BeamSearch(width=100_000), "beam width"),
    (lambda: BeamSearch(length_penalty=HUGE), "length penalty"),
    (lambda: BeamSearch(length_penalty=float("inf")), "length penalty"),
    (lambda: Sampling(temperature=HUGE), "temperature"),
    (lambda: Sampling(top_k=10**30), "top-k"),
    (lambda: Sampling(seed=2**63), "the seed"),
])
def test_every_parameter_out_of_its_range_is_one_line(make, words):
    with pytest.raises(DecodingError) as info:
        make()
    assert str(info.value).startswith(words) and "\n" not in str(info.value) and len(str(info.value)) < 120


def test_the_ranges_ends_are_accepted_and_one_past_them_is_not():
    assert BeamSearch(width=BEAM_WIDTH.high, length_penalty=LENGTH_PENALTY.high).width == 64
    s = Sampling(temperature=TEMPERATURE.low, top_k=TOP_K.high, top_p=TOP_P.high, seed=SEED.high)
    assert (s.temperature, s.top_k, s.seed) == (0.01, 1_048_576, 2**63 - 1)
    for make in (lambda: BeamSearch(width=BEAM_WIDTH.high + 1), lambda: BeamSearch(length_penalty=LENGTH_PENALTY.high + 0.5),
                 lambda: Sampling(temperature=TEMPERATURE.high * 2), lambda: Sampling(top_k=TOP_K.high + 1)):
        with pytest.raises(DecodingError):
            make()


# -- other commands' numbers ----------------------------------------------------------------------------
@pytest.mark.parametrize("steps", ["1000000000", TOO_MANY])
def test_attribute_refuses_too_many_integrated_gradient_steps_before_loading(capsys, nothing_loaded, steps):
    err = one_line_error(capsys, ["attribute", "--src", "我爱你。", "--method", "ig", "--steps", steps])
    assert f"--steps must be from 1 to 10,000, not {steps}" in err


def test_evaluate_refuses_threads_out_of_range_before_loading(capsys, nothing_loaded):
    assert "--threads must be from 1 to 1024" in one_line_error(capsys, ["evaluate", "--threads", TOO_MANY])
    assert "--threads must be from 1 to 1024, not 0" in one_line_error(capsys, ["evaluate", "--threads", "0"])


def test_train_refuses_an_option_of_hundreds_of_digits(capsys, tmp_path):
    out = tmp_path / "run"
    err = one_line_error(capsys, ["train", "--data", "reverse", "--epochs", str(HUGE), "--out", str(out)], code=None)
    assert "epochs must be an integer from 1 to 100000" in err and not out.exists()


# -- config.json: an integer too large for a float --------------------------------------------------------
@pytest.mark.parametrize("field, words", [("d_model", "d_model must be an integer in [1, 65,536]"),
                                          ("dropout", "dropout must be a finite number in [0, 1)"),
                                          ("norm_eps", "norm_eps must be a finite number in (0, 1]")])
def test_a_bundle_config_with_a_309_digit_integer_is_refused_in_one_line(tmp_path, capsys, field, words):
    folder = shutil.copytree(ROOT / "models" / "reverse", tmp_path / "reverse")
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    config[field] = 2 * 10**308  # 309 digits: past the largest float (1.8e308)
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    with pytest.raises(AttnvizError) as info:
        load_bundle(folder)
    assert words in str(info.value) and "\n" not in str(info.value)
    assert words in one_line_error(capsys, ["translate", "--model", str(folder), "1 2 3"], code=None)


@pytest.mark.parametrize("build, field, words", [
    (build_marian, "d_model", "d_model must be"), (build_marian, "dropout", "dropout must be"),
    (build_gpt2, "n_embd", "d_model must be"), (build_bert, "num_hidden_layers", "n_encoder_layers must be"),
    (build_bart, "encoder_layers", "n_encoder_layers must be"), (build_t5, "d_model", "d_model must be"),
])
def test_a_hugging_face_config_with_a_huge_integer_is_refused_in_one_line(tmp_path, build, field, words):
    folder = build(tmp_path / "model")
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    config[field] = HUGE
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    with pytest.raises(AttnvizError) as info:
        load_bundle(folder)
    assert words in str(info.value) and "\n" not in str(info.value)
