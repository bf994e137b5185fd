"""Tiny random BART, mBART, T5 (v1.0 and v1.1), GPT-2 and BERT models with their tokenizer files, saved by
``transformers`` into a folder (no network): what the Hugging Face folders of these families look
like, at toy size. Needs ``transformers``; tests import it after ``pytest.importorskip("transformers")``."""

from __future__ import annotations

import io
import json
import warnings
from pathlib import Path

import sentencepiece as spm
import torch
import transformers

from attnviz.core.data.bpe_tokenizer import byte_characters

LINES = ["the cat sat on the mat", "a dog runs in the park", "i like green tea", "we read books at night", "the sun is bright today"]
SOURCES = ["the cat runs", "we like the park at night", "a dog reads books", "green sun"]
MERGES = ["Ġ t", "h e", "Ġt he", "a t", "Ġ c", "Ġc at", "Ġ s", "Ġs at", "o n", "Ġ on", "Ġ m", "Ġm at", "Ġ d", "o g", "Ġd og", "Ġ p", "a r", "Ġp ar", "Ġpar k"]


def _randomize(model: torch.nn.Module, seed: int, eos_boost: tuple[int, float] | None = None) -> None:
    torch.manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.3 if p.dim() > 1 else 0.1)
        if eos_boost is not None and hasattr(model, "final_logits_bias"):
            model.final_logits_bias.normal_(0.0, 1.0)
            model.final_logits_bias[0, eos_boost[0]] += eos_boost[1]  # EOS: outputs end at different lengths


def _save(model: torch.nn.Module, folder: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.save_pretrained(folder)


def bpe_vocab() -> dict[str, int]:
    """BART's special tokens, every byte's character, then the merged pieces."""
    pieces = ["<s>", "<pad>", "</s>", "<unk>", *byte_characters().values(), *(a + b for a, b in (m.split() for m in MERGES))]
    return {p: i for i, p in enumerate(dict.fromkeys(pieces))}


def build_bart(folder: Path, seed: int = 0, mbart: bool = False) -> Path:
    """A tiny random BART (or mBART: pre-norm, final norms, scaled embeddings) with vocab.json and merges.txt."""
    folder.mkdir(parents=True, exist_ok=True)
    vocab = bpe_vocab()
    (folder / "vocab.json").write_text(json.dumps(vocab))
    (folder / "merges.txt").write_text("#version: 0.2\n" + "\n".join(MERGES) + "\n")
    kind = (transformers.MBartConfig, transformers.MBartForConditionalGeneration) if mbart else (transformers.BartConfig, transformers.BartForConditionalGeneration)
    config = kind[0](
        vocab_size=len(vocab), d_model=16, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4,
        encoder_ffn_dim=32, decoder_ffn_dim=32, max_position_embeddings=64, activation_function="gelu", scale_embedding=mbart,
        pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2, forced_eos_token_id=None, forced_bos_token_id=None,
    )
    torch.manual_seed(seed)
    model = kind[1](config).eval()
    _randomize(model, seed, eos_boost=(2, 1.5))
    _save(model, folder)
    return folder


def _train_spiece(file: Path) -> None:
    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(LINES * 3), model_writer=buf, vocab_size=40, model_type="unigram", hard_vocab_limit=False, minloglevel=2,
        num_threads=1, character_coverage=1.0, pad_id=0, eos_id=1, unk_id=2, bos_id=-1,
    )
    file.write_bytes(buf.getvalue())


def build_t5(folder: Path, seed: int = 0, v1_1: bool = False, mt5: bool = False) -> Path:
    """A tiny random T5 (v1.0: ReLU, tied and scaled output; v1.1: gated GELU; mT5: heads narrower than d_model / h)."""
    folder.mkdir(parents=True, exist_ok=True)
    _train_spiece(folder / "spiece.model")
    n = spm.SentencePieceProcessor(model_file=str(folder / "spiece.model")).get_piece_size()
    kind = (transformers.MT5Config, transformers.MT5ForConditionalGeneration) if mt5 else (transformers.T5Config, transformers.T5ForConditionalGeneration)
    config = kind[0](
        vocab_size=n + 8, d_model=16, d_kv=3 if mt5 else 4, d_ff=32, num_layers=2, num_decoder_layers=2, num_heads=4,
        relative_attention_num_buckets=8, relative_attention_max_distance=20, feed_forward_proj="gated-gelu" if v1_1 else "relu",
        tie_word_embeddings=not v1_1, decoder_start_token_id=0, pad_token_id=0, eos_token_id=1,
    )
    torch.manual_seed(seed)
    model = kind[1](config).eval()
    _randomize(model, seed)
    with torch.no_grad():
        model.shared.weight[1] += 0.5  # EOS: outputs end at different lengths
    _save(model, folder)
    return folder


def build_gpt2(folder: Path, seed: int = 0) -> Path:
    """A tiny random GPT-2 with vocab.json and merges.txt: the bytes, the merged pieces, then ``<|endoftext|>``."""
    folder.mkdir(parents=True, exist_ok=True)
    pieces = [p for p in bpe_vocab() if p not in ("<s>", "<pad>", "</s>", "<unk>")] + ["<|endoftext|>"]
    vocab = {p: i for i, p in enumerate(pieces)}
    (folder / "vocab.json").write_text(json.dumps(vocab))
    (folder / "merges.txt").write_text("#version: 0.2\n" + "\n".join(MERGES) + "\n")
    end = vocab["<|endoftext|>"]
    config = transformers.GPT2Config(vocab_size=len(vocab), n_embd=16, n_layer=2, n_head=4, n_positions=48, bos_token_id=end, eos_token_id=end)
    torch.manual_seed(seed)
    model = transformers.GPT2LMHeadModel(config).eval()
    _randomize(model, seed)
    with torch.no_grad():
        model.transformer.wte.weight[end] *= 3.0  # <|endoftext|>: continuations end at different lengths
    _save(model, folder)
    return folder


WORDPIECES = ["[PAD]", "[unused0]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat", "dog", "runs", "park", "##s", "##ing",
              "!", ",", ".", "'", *"abcdefghijklmnopqrstuvwxyz", *("##" + c for c in "abcdefghijklmnopqrstuvwxyz"), "猫"]


def build_bert(folder: Path, seed: int = 0) -> Path:
    """A tiny random ``BertForMaskedLM`` with its vocab.txt (lowercase WordPiece)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.txt").write_text("\n".join(WORDPIECES) + "\n")
    config = transformers.BertConfig(
        vocab_size=len(WORDPIECES), hidden_size=16, num_hidden_layers=2, num_attention_heads=4, intermediate_size=32, max_position_embeddings=40,
    )
    torch.manual_seed(seed)
    model = transformers.BertForMaskedLM(config).eval()
    _randomize(model, seed)
    _save(model, folder)
    return folder
