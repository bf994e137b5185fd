"""What the commands say about the Hugging Face families, through ``attnviz.cli.main``: each run ends
with its exit code and at most one line on stderr, never a traceback, and a refusal says what is
really the matter.

1. ``page --tour`` refuses at once a stop that does not describe the model (sin/cos positional
   encoding on learned positions or on T5's relative position biases; attention of a kind the
   model has not), and a stop whose view cannot become ready ends in one line, not a long wait.
2. BERT has no decoding to animate or put on a page; GPT-2's page shows its decoder (it has no
   cross-attention); ``export --layer 0`` is refused (layers are 1-based); a special token listed
   twice in ``vocab.txt``, sharded weights and a session naming a folder that is no model folder
   are each named as they are.
3. ``ablate`` and ``head-importance`` on GPT-2 score the continuation only, as ``transformers``'
   log-softmax over those tokens gives (ablated heads: hooks on ``c_proj``), and on BART as its
   teacher-forced pass gives."""

from __future__ import annotations

import json
import shutil
import time
import warnings

import pytest
import torch
from family_checks import refused_cli, run_cli

from attnviz.core.bundle import load_bundle
from attnviz.core.model.config import POSITIONALS
from attnviz.core.tour_data import POSITIONAL_WORDS, TourError, check_same_tour, load_tour, parse_tour, stop_mismatch, tour_path
from attnviz.qt.state import AppState

transformers = pytest.importorskip("transformers", reason="transformers is not installed (pip install 'attnviz[hf]')")

from tiny_families import WORDPIECES, build_bart, build_bert, build_gpt2, build_t5  # noqa: E402  (needs transformers)
from tiny_marian import build_marian  # noqa: E402

pytestmark = pytest.mark.slow  # tiny transformers models built and compared: make test runs them, the fast loop does not

PROMPT, OTHER = "the cat sat", "the dog sat"
BUILDERS = {"Marian": build_marian, "BART": build_bart, "mBART": lambda f: build_bart(f, mbart=True), "T5": build_t5,
            "mT5": lambda f: build_t5(f, v1_1=True, mt5=True), "GPT-2": build_gpt2, "BERT": build_bert}
QUICK_S = 60.0  # a refusal "at once", on a loaded machine (the wait it replaces was two minutes)


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("families")
    return {name: build(root / name) for name, build in BUILDERS.items()}


# -- 1. the tour's stops on a page ------------------------------------------------------------------
@pytest.mark.parametrize(("family", "what"), [("BART", "learned positions"), ("mBART", "learned positions"),
                                              ("T5", "relative position biases"), ("mT5", "relative position biases")])
def test_page_refuses_the_sin_cos_stop_at_once_on_a_model_without_sinusoidal_encoding(folders, capsys, tmp_path, family, what):
    positional = load_bundle(folders[family]).config.positional
    assert positional != "sinusoidal"
    started = time.monotonic()
    code, err = refused_cli(capsys, "page", "--model", folders[family], "--src", PROMPT, "--tour", "positional-encoding", "--out", tmp_path / "page")
    assert time.monotonic() - started < QUICK_S
    assert code == 2 and "'positional-encoding'" in err and POSITIONAL_WORDS["sinusoidal"] in err
    assert POSITIONAL_WORDS[positional] in err and what in err
    assert not (tmp_path / "page" / "index.html").exists()


@pytest.mark.parametrize(("stop", "kind"), [("positional-encoding", "encoder"), ("cross-attention", "cross"), ("weighted-sums", "encoder")])
def test_page_refuses_at_once_a_stop_that_shows_attention_gpt2_has_not(folders, capsys, tmp_path, stop, kind):
    code, err = refused_cli(capsys, "page", "--model", folders["GPT-2"], "--src", PROMPT, "--tour", stop, "--out", tmp_path / "page")
    assert code == 2 and f"'{stop}' shows {kind} attention" in err and f"no {kind} layers" in err and "decoder-only" in err


def test_the_sin_cos_stop_is_explained_with_every_number_on_a_model_with_sinusoidal_encoding(folders, capsys, tmp_path):
    assert load_bundle(folders["Marian"]).config.positional == "sinusoidal"
    code, out, _ = run_cli(capsys, "page", "--model", folders["Marian"], "--src", PROMPT, "--tour", "positional-encoding", "--out", tmp_path)
    assert code == 0 and out.startswith(str(tmp_path / "index.html"))
    html = (tmp_path / "index.html").read_text(encoding="utf-8")
    stop = load_tour("en").stops[load_tour("en").index("positional-encoding")]
    assert stop.title.split(":")[0] in html and "sin(pos" in html
    assert "—" not in html  # no measure of the stop left without its number


def test_a_stop_whose_view_has_nothing_to_show_ends_in_one_line_without_waiting(folders, qapp):
    """Past the command's check (the window's tour, say), the compare view of a model whose
    positions are no encoding to leave out has nothing to show: the wait ends at once, in one line."""
    from attnviz.qt.publish.web_page import WebPageError
    from attnviz.qt.tour_offscreen import STOP_TIMEOUT_S, explained_stops

    tour = load_tour("en")
    started = time.monotonic()
    with pytest.raises(WebPageError) as refused:
        explained_stops(folders["T5"], tour, [tour.index("positional-encoding")])
    assert time.monotonic() - started < min(QUICK_S, STOP_TIMEOUT_S)
    message = str(refused.value)
    why = stop_mismatch(tour.stops[tour.index("positional-encoding")], load_bundle(folders["T5"]).config)
    assert why is not None and why in message and "'positional-encoding'" in message and "\n" not in message


def test_which_stops_apply_to_which_models(folders):
    configs = {name: load_bundle(folder).config for name, folder in folders.items()}
    tour = load_tour("en")
    by_id = {s.id: s for s in tour.stops}
    applies = {name: {s.id for s in tour.stops if stop_mismatch(s, cfg) is None} for name, cfg in configs.items()}
    assert applies["Marian"] == set(by_id)  # the paper's model: every stop
    for name in ("BART", "mBART", "T5", "mT5"):
        assert applies[name] == set(by_id) - {"positional-encoding"}, name
    assert applies["GPT-2"] == {s.id for s in tour.stops if s.state.kind == "decoder"} == {"look-ahead-mask"}
    assert applies["BERT"] == {s.id for s in tour.stops if s.state.kind == "encoder"} - {"positional-encoding"}


def test_a_tour_file_names_only_positional_schemes_and_its_translation_the_same(tmp_path):
    raw = json.loads(tour_path("en").read_text(encoding="utf-8"))
    first = parse_tour(raw, tour_path("en"))
    raw["stops"][0]["positional"] = ["polar"]
    with pytest.raises(TourError, match=f"'positional' must be a non-empty list of {', '.join(POSITIONALS)}"):
        parse_tour(raw, tmp_path / "bad.json")
    raw["stops"][0]["positional"] = ["learned", "relative"]
    other = parse_tour(raw, tmp_path / "other.json")
    with pytest.raises(TourError, match=f"stop '{first.stops[0].id}': its positional differs"):
        check_same_tour(first, other)


# -- 2. messages that say what is the matter --------------------------------------------------------
@pytest.mark.parametrize(("command", "purpose", "out"), [("animate", "animate", "a.gif"), ("page", "put on a page", "page")])
def test_bert_has_no_decoding_to_animate_or_put_on_a_page(folders, capsys, tmp_path, command, purpose, out):
    code, err = refused_cli(capsys, command, "--model", folders["BERT"], "--src", "the cat [MASK]", "--out", tmp_path / out)
    assert code == 2 and f"an encoder-only model (BERT) has no decoding to {purpose}" in err and "type a source sentence" not in err


@pytest.mark.parametrize(("command", "out"), [("animate", "a.gif"), ("page", "page")])
def test_gpt2_pages_and_animations_show_its_decoder_and_refuse_cross_attention(folders, capsys, tmp_path, command, out):
    code, printed, _ = run_cli(capsys, command, "--model", folders["GPT-2"], "--src", PROMPT, "--out", tmp_path / out)
    assert code == 0 and printed.startswith(str(tmp_path / out))
    if command == "page":
        html = (tmp_path / out / "index.html").read_text(encoding="utf-8")
        assert 'alt="Decoder masked self-attention' in html and "Cross-attention" not in html
    code, err = refused_cli(capsys, command, "--model", folders["GPT-2"], "--src", PROMPT, "--kind", "cross", "--out", tmp_path / "again" / out)
    assert code == 2 and "--kind cross: this decoder-only model has no cross attention (choose --kind decoder)" in err
    assert "between 1 and 0" not in err


@pytest.mark.parametrize(("family", "kind"), [("GPT-2", "decoder"), ("BERT", "encoder")])
def test_export_without_kind_draws_a_kind_the_model_has(folders, capsys, tmp_path, family, kind):
    code, out, err = run_cli(capsys, "export", "--model", folders[family], "--src", PROMPT, "--out", tmp_path / "grid")
    assert code == 0 and out.strip() == str(tmp_path / "grid" / f"grid_{kind}.png"), err
    code, err = refused_cli(capsys, "export", "--model", folders[family], "--src", PROMPT, "--kind", "cross", "--out", tmp_path / "cross")
    assert code == 2 and "no cross" in err


def test_export_refuses_layer_zero_as_layers_count_from_one(folders, capsys, tmp_path):
    code, err = refused_cli(capsys, "export", "--model", folders["Marian"], "--src", PROMPT, "--layer", "0", "--out", tmp_path / "zero")
    assert code == 2 and "--layer is 1-based: at least 1, not 0" in err and not (tmp_path / "zero").exists()
    code, out, _ = run_cli(capsys, "export", "--model", folders["Marian"], "--src", PROMPT, "--layer", "1", "--out", tmp_path / "one")
    assert code == 0 and out.strip() == str(tmp_path / "one" / "grid_cross.png")


@pytest.mark.parametrize("special", ["[UNK]", "[CLS]", "[SEP]"])
def test_a_special_token_listed_twice_in_vocab_txt_is_named(folders, capsys, tmp_path, special):
    folder = shutil.copytree(folders["BERT"], tmp_path / "bert")
    pieces = (folder / "vocab.txt").read_text().splitlines() + [special]
    (folder / "vocab.txt").write_text("\n".join(pieces) + "\n")
    _, err = refused_cli(capsys, "trace", "--model", folder, "--src", "the cat", "--json")
    first, last = WORDPIECES.index(special) + 1, len(pieces)
    assert f"vocab.txt: lists the token {special} twice (lines {first} and {last})" in err and "outside the vocabularies" not in err


def _shard_pickled(folder, state: dict[str, torch.Tensor]) -> None:
    """``state`` written as ``transformers`` shards a ``pytorch_model.bin``: two files and their index."""
    names = sorted(state)
    parts = [names[: len(names) // 2], names[len(names) // 2:]]
    weight_map = {}
    for i, part in enumerate(parts):
        shard = f"pytorch_model-{i + 1:05d}-of-{len(parts):05d}.bin"
        torch.save({n: state[n].contiguous() for n in part}, folder / shard)
        weight_map |= dict.fromkeys(part, shard)
    (folder / "pytorch_model.bin.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))


@pytest.mark.parametrize("index", ["model.safetensors.index.json", "pytorch_model.bin.index.json"])
def test_sharded_weights_are_named_with_their_index_file(folders, capsys, tmp_path, index):
    folder = tmp_path / "sharded"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = transformers.GPT2LMHeadModel.from_pretrained(folders["GPT-2"])
        theirs.save_pretrained(folder, max_shard_size="20KB")  # transformers' own sharding: safetensors shards
    if index.startswith("pytorch_model"):
        for file in [*folder.glob("model*.safetensors*")]:
            file.unlink()
        _shard_pickled(folder, theirs.state_dict())
    for name in ("vocab.json", "merges.txt"):
        shutil.copy(folders["GPT-2"] / name, folder / name)
    shards = sorted(p.name for p in folder.iterdir() if "-of-" in p.name)
    assert (folder / index).is_file() and len(shards) > 1
    assert not (folder / "model.safetensors").exists() and not (folder / "pytorch_model.bin").exists()
    _, err = refused_cli(capsys, "translate", "--model", folder, PROMPT)
    assert f"{folder / index}: sharded weights are not read" in err and "no weights" not in err


def test_a_session_naming_a_folder_that_is_no_model_folder_says_so(capsys, tmp_path):
    session = tmp_path / "dev.attnviz"
    session.write_text(AppState(model_path="/dev", model_hash="0" * 64).to_json(), encoding="utf-8")
    code, err = refused_cli(capsys, "--session", session)
    assert code == 2 and "model folder /dev is not a model folder (it holds no config.json)" in err and "changed" not in err


# -- 3. ablation and head importance score GPT-2's continuation ------------------------------------
def _gpt2(folder):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = transformers.GPT2LMHeadModel.from_pretrained(folder, attn_implementation="eager").eval()
    return theirs, transformers.GPT2Tokenizer(str(folder / "vocab.json"), str(folder / "merges.txt"))


def _without_head(projection: torch.nn.Module, head: int, width: int):
    """A hook that zeroes head ``head``'s columns (``width`` each) of ``projection``'s input: Z_i = 0 before W^O."""
    def zero(_, inputs):
        z = inputs[0].clone()
        z[..., head * width:(head + 1) * width] = 0.0
        return (z, *inputs[1:])

    return projection.register_forward_pre_hook(zero)


def _continuation_log_prob(theirs, prompt: list[int], target: list[int], ablated: tuple[int, int] | None = None) -> float:
    """Σ log P(target_t) of ``transformers``' pass over SOS + prompt + target[:-1], the continuation's
    tokens only; ``ablated`` (layer, head), 0-based: that head's Z zeroed."""
    fed = prompt + target[:-1]
    hook = None
    if ablated is not None:
        cfg = theirs.config
        hook = _without_head(theirs.transformer.h[ablated[0]].attn.c_proj, ablated[1], cfg.n_embd // cfg.n_head)
    try:
        with torch.no_grad():
            logp = torch.log_softmax(theirs(torch.tensor([fed])).logits[0].double(), -1)
    finally:
        if hook is not None:
            hook.remove()
    return float(sum(logp[len(prompt) - 1 + t, y] for t, y in enumerate(target)))


def _greedy_continuation(theirs, prompt: list[int]) -> list[int]:
    n = len(prompt) - 1
    with torch.no_grad():
        out = theirs.generate(torch.tensor([prompt]), attention_mask=torch.ones(1, len(prompt), dtype=torch.long), do_sample=False,
                              num_beams=1, max_new_tokens=min(theirs.config.n_positions, 2 * n + 10) - n, pad_token_id=prompt[0])
    return out[0].tolist()[len(prompt):]


@pytest.mark.parametrize("heads", ["decoder:1:2", "decoder:2:3"])
def test_gpt2_ablation_scores_the_continuation_as_transformers_does(folders, capsys, heads):
    theirs, tok = _gpt2(folders["GPT-2"])
    code, out, _ = run_cli(capsys, "ablate", "--model", folders["GPT-2"], "--src", PROMPT, "--heads", heads, "--json")
    assert code == 0
    report = json.loads(out)
    prompt = [tok.eos_token_id, *tok(PROMPT)["input_ids"]]
    target = _greedy_continuation(theirs, prompt)
    assert report["target_ids"] == target
    _, layer, head = heads.split(":")
    before = _continuation_log_prob(theirs, prompt, target)
    after = _continuation_log_prob(theirs, prompt, target, (int(layer) - 1, int(head) - 1))
    assert abs(report["log_prob_before"] - before) < 1e-5 and abs(report["log_prob_after"] - after) < 1e-5
    whole = _continuation_log_prob(theirs, prompt[:1], prompt[1:] + target)  # the prompt's tokens scored too
    assert before - whole > 1.0  # the prompt is read, never scored


def test_gpt2_head_importance_scores_the_continuation_as_transformers_does(folders, capsys):
    theirs, tok = _gpt2(folders["GPT-2"])
    code, out, _ = run_cli(capsys, "head-importance", "--model", folders["GPT-2"], "--src", OTHER, "--json")
    assert code == 0
    report = json.loads(out)
    prompt = [tok.eos_token_id, *tok(OTHER)["input_ids"]]
    target = _greedy_continuation(theirs, prompt)
    clean = _continuation_log_prob(theirs, prompt, target)
    assert abs(report["log_prob"] - clean) < 1e-5
    cfg = theirs.config
    got = {h["head"]: h["delta_log_prob"] for h in report["heads"]}
    assert len(got) == cfg.n_layer * cfg.n_head
    for layer in range(cfg.n_layer):
        for head in range(cfg.n_head):
            want = _continuation_log_prob(theirs, prompt, target, (layer, head)) - clean
            assert abs(got[f"decoder:{layer + 1}:{head + 1}"] - want) < 1e-5, (layer, head)


@pytest.mark.parametrize("heads", ["encoder:1:2", "decoder:2:1", "cross:1:4"])
def test_bart_ablation_scores_its_output_as_transformers_does(folders, capsys, heads):
    folder = folders["BART"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = transformers.BartForConditionalGeneration.from_pretrained(folder, attn_implementation="eager").eval()
    src = transformers.BartTokenizer.from_pretrained(folder)(PROMPT)["input_ids"]
    code, out, _ = run_cli(capsys, "ablate", "--model", folder, "--src", PROMPT, "--heads", heads, "--json")
    assert code == 0
    report = json.loads(out)
    target = report["target_ids"]
    kind, layer, head = heads.split(":")
    stack = theirs.model.encoder if kind == "encoder" else theirs.model.decoder
    attention = stack.layers[int(layer) - 1].encoder_attn if kind == "cross" else stack.layers[int(layer) - 1].self_attn
    cfg = theirs.config
    fed = torch.tensor([[cfg.decoder_start_token_id, *target[:-1]]])

    def log_prob() -> float:
        with torch.no_grad():
            logp = torch.log_softmax(theirs(input_ids=torch.tensor([src]), decoder_input_ids=fed).logits[0].double(), -1)
        return float(logp[torch.arange(len(target)), torch.tensor(target)].sum())

    before = log_prob()
    hook = _without_head(attention.out_proj, int(head) - 1, cfg.d_model // cfg.encoder_attention_heads)
    try:
        after = log_prob()
    finally:
        hook.remove()
    assert abs(report["log_prob_before"] - before) < 1e-5 and abs(report["log_prob_after"] - after) < 1e-5
    assert abs(after - before) > 1e-6  # the head made a difference
