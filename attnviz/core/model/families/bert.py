"""BERT (``BertForMaskedLM``, google-bert's ``bert-base-uncased``): an encoder-only model
(``kind="encoder-only"``: no decoder, nothing to decode). Post-norm LayerNorms, learned positions,
a LayerNorm on the embedding sum (``layernorm_embedding``), GELU, embeddings unscaled. Every
sentence is segment 0, so BERT's token-type row 0 is a constant vector added at every position:
it is folded into the position table (row p of ours = position p + token type 0). The output layer
is the masked-token head ``cls.predictions`` (a dense + GELU + LayerNorm transform, then the token
embedding tied, with its own bias): ``Transformer.predict_masked`` gives the logits of the token at
every position. The pooler and the next-sentence head, which masked-token prediction never reads,
are left out.

Tokenizer: WordPiece (``vocab.txt``; lowercased unless ``tokenizer_config.json`` says
``do_lower_case`` false); a sentence is ``[CLS] ... [SEP]`` (SOS and EOS)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import torch

from attnviz.core.data.tokenizer import TokenizerError
from attnviz.core.data.wordpiece_tokenizer import SPECIALS, WordPieceTokenizer, read_vocab_txt
from attnviz.core.files import read_capped, read_json_capped
from attnviz.core.model.config import TransformerConfig
from attnviz.core.model.families.common import (
    CONFIG,
    CONFIG_LIMIT,
    VOCAB_LIMIT,
    HFImportError,
    activation,
    build_config,
    check_kinds,
    check_present,
    check_shapes,
    check_vocab_size,
    field,
    rename,
    tokenizer_ids,
)

VOCAB, TOKENIZER_CONFIG = "vocab.txt", "tokenizer_config.json"
_L = r"encoder\.layer\.(\d+)\."
_KIND = r"\.(weight|bias)"
_NAMES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(theirs + _KIND), ours + r".\g<" + str(theirs.count("(") + 1) + ">")
    for theirs, ours in (
        (_L + r"attention\.self\.query", r"encoder.layers.\1.self_attn.w_q"),
        (_L + r"attention\.self\.key", r"encoder.layers.\1.self_attn.w_k"),
        (_L + r"attention\.self\.value", r"encoder.layers.\1.self_attn.w_v"),
        (_L + r"attention\.output\.dense", r"encoder.layers.\1.self_attn.w_o"),
        (_L + r"attention\.output\.LayerNorm", r"encoder.layers.\1.norm1"),
        (_L + r"intermediate\.dense", r"encoder.layers.\1.ffn.linear1"),
        (_L + r"output\.dense", r"encoder.layers.\1.ffn.linear2"),
        (_L + r"output\.LayerNorm", r"encoder.layers.\1.norm2"),
        (r"embeddings\.LayerNorm", "encoder.embed.norm"),
        (r"cls\.predictions\.transform\.dense", "generator.transform"),
        (r"cls\.predictions\.transform\.LayerNorm", "generator.norm"),
    )
)
_UNUSED = re.compile(r"pooler\..*|cls\.seq_relationship\..*|embeddings\.(position_ids|token_type_ids)")  # never read by masked-token prediction
_OLD_NORM_NAMES = {"gamma": "weight", "beta": "bias"}  # LayerNorm parameters of early checkpoints


class Bert:
    """The BERT family (see the module docstring)."""

    name = "BERT"
    architectures = ("BertForMaskedLM", "BertForPreTraining")
    model_types = ("bert",)
    files = (VOCAB,)

    def config(self, hf: dict[str, Any], folder: Path) -> TransformerConfig:
        file = folder / CONFIG
        _check_bert_choices(hf, file)
        vocab = _vocab(folder)
        special = {name: _special(vocab, name, folder) for name in ("[UNK]", "[CLS]", "[SEP]")}
        return build_config(file, dict(
            src_vocab_size=field(hf, file, "vocab_size"), tgt_vocab_size=field(hf, file, "vocab_size"), d_model=field(hf, file, "hidden_size"),
            n_heads=field(hf, file, "num_attention_heads"), n_encoder_layers=field(hf, file, "num_hidden_layers"), n_decoder_layers=0,
            d_ff=field(hf, file, "intermediate_size"), dropout=hf.get("hidden_dropout_prob", 0.1), max_len=field(hf, file, "max_position_embeddings"),
            norm="layer", norm_placement="post", final_norm=False, tie_embeddings=hf.get("tie_word_embeddings", True),
            norm_eps=hf.get("layer_norm_eps", 1e-12), pad_id=hf.get("pad_token_id", 0), unk_id=special["[UNK]"], bos_id=special["[CLS]"],
            eos_id=special["[SEP]"], activation=activation(hf.get("hidden_act", "gelu"), file), positional="learned", scale_embedding=False,
            layernorm_embedding=True, kind="encoder-only",
        ))

    def state_dict(self, theirs: dict[str, torch.Tensor], config: TransformerConfig, where: Path) -> dict[str, torch.Tensor]:
        """``theirs`` under our names (token type 0 folded into the positions), each tensor checked against a model of ``config``."""
        theirs = {_new_norm_name(k.removeprefix("bert.")): v for k, v in theirs.items() if not _UNUSED.fullmatch(k.removeprefix("bert."))}
        check_kinds(theirs, where)
        ours: dict[str, torch.Tensor] = {}
        for key, tensor in theirs.items():
            name = rename(key, _NAMES)
            if name is not None:
                ours[name] = tensor
            elif key not in _HEAD_AND_TABLES:
                raise HFImportError(where, f"unexpected tensor {key!r} (not a BERT model's?)")
        ours |= _tables(theirs, config, where) | _output_layer(theirs, config, where)
        check_shapes(ours, config, where)
        return ours

    def tokenizers(self, folder: Path, config: TransformerConfig) -> tuple[WordPieceTokenizer, WordPieceTokenizer]:
        """The WordPiece tokenizer of ``vocab.txt`` (both sides: an encoder-only model reads and predicts one text)."""
        pieces = _vocab(folder)
        check_vocab_size(folder / VOCAB, len(pieces), config)
        try:
            tokenizer = WordPieceTokenizer(pieces, lowercase=_lowercase(folder), **tokenizer_ids(config))
        except TokenizerError as exc:
            raise HFImportError(folder / VOCAB, str(exc)) from None
        return tokenizer, tokenizer


FAMILY = Bert()
_TABLES = ("embeddings.word_embeddings.weight", "embeddings.position_embeddings.weight", "embeddings.token_type_embeddings.weight")
_HEAD_AND_TABLES = (*_TABLES, "cls.predictions.bias", "cls.predictions.decoder.weight", "cls.predictions.decoder.bias")


def _new_norm_name(key: str) -> str:
    """``...LayerNorm.gamma`` -> ``...LayerNorm.weight`` (and ``beta`` -> ``bias``); other names as they are."""
    stem, _, last = key.rpartition(".")
    return f"{stem}.{_OLD_NORM_NAMES[last]}" if "LayerNorm" in stem and last in _OLD_NORM_NAMES else key


def _check_bert_choices(hf: dict[str, Any], file: Path) -> None:
    """``HFImportError`` for a BERT variant the mapping would not reproduce exactly."""
    if hf.get("position_embedding_type", "absolute") != "absolute":
        raise HFImportError(file, f"position_embedding_type {hf.get('position_embedding_type')!r} is not supported (attnviz reads 'absolute')")
    if hf.get("is_decoder") or hf.get("add_cross_attention"):
        raise HFImportError(file, "a BERT used as a decoder is not supported (attnviz reads BERT as an encoder)")


def _vocab(folder: Path) -> list[str]:
    file = folder / VOCAB
    check_present(file, "a BERT model folder needs vocab.txt")
    try:
        pieces = read_vocab_txt(read_capped(file, VOCAB_LIMIT, HFImportError))
    except TokenizerError as exc:
        raise HFImportError(file, str(exc)) from None
    _check_specials_once(pieces, file)
    return pieces


def _check_specials_once(pieces: list[str], file: Path) -> None:
    """``HFImportError`` for a special token (``[UNK]``, ``[CLS]``…) on more than one line: its id would be ambiguous."""
    for name in SPECIALS:
        lines = [i + 1 for i, p in enumerate(pieces) if p == name]
        if len(lines) > 1:
            raise HFImportError(file, f"lists the token {name} twice (lines {lines[0]} and {lines[1]}): a special token must be listed once")


def _special(pieces: list[str], name: str, folder: Path) -> int:
    if name not in pieces:
        raise HFImportError(folder / VOCAB, f"has no {name} piece (not a BERT vocabulary?)")
    return len(pieces) - 1 - pieces[::-1].index(name)  # its last line, as the tokenizer reads it


def _lowercase(folder: Path) -> bool:
    """``do_lower_case`` of ``tokenizer_config.json`` (true where it is absent, as BERT's tokenizer)."""
    file = folder / TOKENIZER_CONFIG
    if not file.exists() and not file.is_symlink():
        return True
    data = read_json_capped(file, CONFIG_LIMIT, HFImportError)
    return not (isinstance(data, dict) and data.get("do_lower_case") is False)


def _tables(theirs: dict[str, torch.Tensor], config: TransformerConfig, where: Path) -> dict[str, torch.Tensor]:
    """The token table, and the position table with token type 0's row added to every position."""
    words, positions, types = (theirs.get(name) for name in _TABLES)
    for name, tensor in zip(_TABLES, (words, positions, types)):
        if tensor is None:
            raise HFImportError(where, f"tensor {name!r} is missing from the weights")
    want = (config.max_len, config.d_model)
    if tuple(positions.shape) != want:
        raise HFImportError(where, f"tensor {_TABLES[1]!r} has shape {tuple(positions.shape)}, config.json implies {want}")
    if types.dim() != 2 or types.shape[0] < 1 or types.shape[1] != config.d_model:
        raise HFImportError(where, f"tensor {_TABLES[2]!r} has shape {tuple(types.shape)}, config.json implies (types, {config.d_model})")
    return {"encoder.embed.table.weight": words, "encoder.embed.pe": positions.float() + types[0].float()}


def _output_layer(theirs: dict[str, torch.Tensor], config: TransformerConfig, where: Path) -> dict[str, torch.Tensor]:
    """The masked-token head's bias (``cls.predictions.bias``, which its decoder's bias repeats) and, untied, its weight."""
    bias, repeated = theirs.get("cls.predictions.bias"), theirs.get("cls.predictions.decoder.bias")
    if bias is None:
        bias = repeated
    if bias is None:
        raise HFImportError(where, "tensor 'cls.predictions.bias' (the masked-token head's bias) is missing from the weights")
    if repeated is not None and not torch.equal(repeated, bias):
        raise HFImportError(where, "'cls.predictions.decoder.bias' differs from 'cls.predictions.bias' it is tied to")
    out = {"generator.bias": bias}
    head, words = theirs.get("cls.predictions.decoder.weight"), theirs["embeddings.word_embeddings.weight"]
    if not config.tie_embeddings:
        if head is None:
            raise HFImportError(where, "tie_word_embeddings is false but there is no 'cls.predictions.decoder.weight'")
        return out | {"generator.weight": head}
    if head is not None and not torch.equal(head, words):
        raise HFImportError(where, "'cls.predictions.decoder.weight' differs from the embedding it is tied to (tie_word_embeddings)")
    return out
