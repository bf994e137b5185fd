"""A tiny random ``MarianMTModel`` with its tokenizer files, saved by ``transformers`` into a
folder (no network): what a Hugging Face opus-mt folder looks like, at toy size. Needs
``transformers`` (the ``hf`` extra); tests import it after ``pytest.importorskip("transformers")``."""

from __future__ import annotations

import io
import json
import warnings
from pathlib import Path

import sentencepiece as spm
import torch
import transformers

SRC_LINES = ["the cat sat on the mat", "a dog runs in the park", "i like green tea", "we read books at night", "the sun is bright today"]
TGT_LINES = ["die katze sass auf der matte", "ein hund rennt im park", "ich mag gruenen tee", "wir lesen nachts buecher", "die sonne ist heute hell"]
SOURCES = ["the cat runs", "we like the park at night", "a dog reads books", "green sun"]


def _train_spm(lines: list[str], file: Path) -> list[str]:
    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines * 3), model_writer=buf, vocab_size=40, model_type="unigram",
        hard_vocab_limit=False, minloglevel=2, num_threads=1, character_coverage=1.0,
    )
    file.write_bytes(buf.getvalue())
    sp = spm.SentencePieceProcessor(model_proto=buf.getvalue())
    return [sp.id_to_piece(i) for i in range(sp.get_piece_size())]


def _marian_vocab(pieces: list[str]) -> dict[str, int]:
    """Marian's layout: EOS 0, UNK 1, the pieces, PAD last."""
    vocab = {"</s>": 0, "<unk>": 1}
    for p in pieces:
        if p not in vocab and p not in ("<s>", "<pad>"):
            vocab[p] = len(vocab)
    vocab["<pad>"] = len(vocab)
    return vocab


def build_marian(folder: Path, seed: int = 0) -> Path:
    """A tiny random MarianMTModel with its tokenizer files, saved by transformers into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    vocab = _marian_vocab(_train_spm(SRC_LINES, folder / "source.spm") + _train_spm(TGT_LINES, folder / "target.spm"))
    (folder / "vocab.json").write_text(json.dumps(vocab))
    v = len(vocab)
    config = transformers.MarianConfig(
        vocab_size=v, decoder_vocab_size=v, d_model=16, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
        decoder_attention_heads=4, encoder_ffn_dim=32, decoder_ffn_dim=32, max_position_embeddings=64, activation_function="swish",
        scale_embedding=True, pad_token_id=v - 1, eos_token_id=0, decoder_start_token_id=v - 1, forced_eos_token_id=None,
    )
    torch.manual_seed(seed)
    model = transformers.MarianMTModel(config).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.3 if p.dim() > 1 else 0.1)
        model.final_logits_bias.normal_(0.0, 1.0)
        model.final_logits_bias[0, 0] += 1.5  # EOS: translations end at different lengths
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.save_pretrained(folder)
        transformers.MarianTokenizer(str(folder / "source.spm"), str(folder / "target.spm"), str(folder / "vocab.json")).save_pretrained(folder)
    return folder
