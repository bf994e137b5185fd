"""Open a local Hugging Face ``MarianMTModel`` folder as an attnviz ``Transformer`` with its tokenizers.

A Marian model (Helsinki-NLP's ``opus-mt-*``) is the paper's architecture with Marian's choices,
each a config field here: post-norm with no final norm, embeddings x sqrt(d_model), sinusoidal
positions with the sines in the first half of each vector (``positional_layout="halves"``), the
FFN's SiLU (``activation``), the output layer tied to one embedding shared by both sides, plus
``final_logits_bias`` (the generator's bias), and the decoder starting from PAD
(``bos_id == pad_id``). The mapping is exact: the same logits and attention weights, to float32
rounding, as ``transformers``' ``MarianMTModel``.

Nothing here imports ``transformers`` and nothing is unpickled: weights come from
``model.safetensors``, or from ``pytorch_model.bin`` through ``torch.load(weights_only=True)``.
Every problem is a one-line ``HFImportError`` raised before a model is built.
"""

from __future__ import annotations

import io
import os
import pickle
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load as st_load

from attnviz.core.data.hf_tokenizer import VocabTokenizer
from attnviz.core.data.tokenizer import TokenizerError
from attnviz.core.files import read_capped, read_json_capped, read_safetensors_header, regular_size
from attnviz.core.model.config import ConfigError, TransformerConfig
from attnviz.core.model.modules import sinusoidal_encoding
from attnviz.core.model.overflow import overflow_problem
from attnviz.core.model.transformer import Transformer
from attnviz.errors import AttnvizError

CONFIG, SAFETENSORS, PICKLED = "config.json", "model.safetensors", "pytorch_model.bin"
SOURCE_SPM, TARGET_SPM, VOCAB = "source.spm", "target.spm", "vocab.json"
BUNDLE_META = "meta.json"  # an attnviz bundle's (attnviz.core.bundle.META, which imports this module)
ARCHITECTURES = ("MarianMTModel",)
_ACTIVATIONS = {"relu": "relu", "gelu": "gelu", "swish": "silu", "silu": "silu"}  # transformers' name -> ours
CONFIG_LIMIT = 1024 * 1024  # bytes: a Marian config.json is about 1 kB
VOCAB_LIMIT = 64 * 1024 * 1024  # bytes: opus-mt's vocab.json is 1-2 MB
SPM_LIMIT = 64 * 1024 * 1024  # bytes: a sentencepiece model of a large vocabulary is a few MB (as bundles' TOKENIZER_LIMIT)
WEIGHTS_SLACK = 16 * 1024 * 1024  # bytes a weights file may hold beyond the float32 tensors its config implies

# transformers' tensor names (after "model.") -> ours; {s} a stack, {i} a layer
_LAYER_NAMES = (
    (r"self_attn\.q_proj", "self_attn.w_q"),
    (r"self_attn\.k_proj", "self_attn.w_k"),
    (r"self_attn\.v_proj", "self_attn.w_v"),
    (r"self_attn\.out_proj", "self_attn.w_o"),
    (r"encoder_attn\.q_proj", "cross_attn.w_q"),
    (r"encoder_attn\.k_proj", "cross_attn.w_k"),
    (r"encoder_attn\.v_proj", "cross_attn.w_v"),
    (r"encoder_attn\.out_proj", "cross_attn.w_o"),
    (r"self_attn_layer_norm", "norm1"),
    (r"encoder_attn_layer_norm", "norm2"),
    (r"fc1", "ffn.linear1"),
    (r"fc2", "ffn.linear2"),
)
_LAYER = re.compile(r"^(encoder|decoder)\.layers\.(\d+)\.(.+)\.(weight|bias)$")
_IGNORED = re.compile(r"^(encoder|decoder)\.embed_positions\.weight$")  # recomputed (sinusoidal), compared
POSITIONS_ATOL = 1e-3  # a stored position table may differ from ours by float16 rounding, not more


class HFImportError(AttnvizError, ValueError):
    """A folder that cannot be opened as a model (one-line message naming the file and the problem)."""

    def __init__(self, path: str | os.PathLike, problem: str):
        super().__init__(f"{Path(path)}: {problem}")


@dataclass
class ImportedModel:
    """What a Hugging Face folder holds, as attnviz objects (``bundle.Bundle``'s parts)."""

    model: Transformer
    src_tokenizer: VocabTokenizer
    tgt_tokenizer: VocabTokenizer
    meta: dict[str, Any] = field(default_factory=dict)


def is_hf_folder(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a Hugging Face model folder, not an attnviz bundle: its ``config.json``
    names a ``model_type``, or (a ``config.json`` that cannot be read: missing, a FIFO, not JSON)
    it holds a Marian folder's tokenizer files and no bundle's ``meta.json``, so that opening it
    names the problem of its ``config.json``. Reads only ``config.json``."""
    folder = Path(path)
    try:
        data = read_json_capped(folder / CONFIG, CONFIG_LIMIT, HFImportError)
    except HFImportError:
        data = None
    if isinstance(data, dict) and isinstance(data.get("model_type"), str):
        return True
    return not os.path.lexists(folder / BUNDLE_META) and any(os.path.lexists(folder / name) for name in (VOCAB, SOURCE_SPM, TARGET_SPM))


def read_hf_folder(path: str | os.PathLike, device: str | torch.device = "cpu") -> ImportedModel:
    """The model and tokenizers of a local ``MarianMTModel`` folder, in eval mode on ``device``."""
    folder = Path(path)
    if not folder.is_dir():
        raise HFImportError(folder, "not a folder (a Hugging Face model folder holds config.json and the weights)")
    hf = read_json_capped(folder / CONFIG, CONFIG_LIMIT, HFImportError)
    vocab = read_json_capped(folder / VOCAB, VOCAB_LIMIT, HFImportError)
    unk_id = vocab.get("<unk>") if isinstance(vocab, dict) else None
    if not isinstance(unk_id, int):
        raise HFImportError(folder / VOCAB, "is not a piece -> id object with '<unk>'")
    config = config_from_hf(hf, folder / CONFIG, unk_id)
    state = hf_state_dict(_read_weights(folder, weights_limit(config)), config, folder)
    src_tok, tgt_tok = _read_tokenizers(folder, config, vocab)
    model = Transformer(config)
    model.load_state_dict(state, strict=False)  # strict=False: a tied generator.weight is not in ``state``
    model.eval()
    problem = overflow_problem(model, state)  # the same finite-probe check as a bundle's
    if problem is not None:
        raise HFImportError(folder, problem)
    model.to(device)
    meta = {"imported_from": str(folder), "architecture": _architecture(hf), "hf_config": hf}
    return ImportedModel(model, src_tok, tgt_tok, meta)


def _architecture(hf: dict[str, Any]) -> str:
    archs = hf.get("architectures")
    return str(archs[0]) if isinstance(archs, list) and archs else str(hf.get("model_type"))


# -- configuration -------------------------------------------------------------------------------
def config_from_hf(hf: Any, file: Path, unk_id: int) -> TransformerConfig:
    """Our config for a ``MarianMTModel``'s ``config.json``; ``HFImportError`` for anything it cannot express."""
    if not isinstance(hf, dict):
        raise HFImportError(file, "is not a JSON object")
    arch = _architecture(hf)
    if arch not in ARCHITECTURES and not (hf.get("model_type") == "marian" and not hf.get("architectures")):
        raise HFImportError(file, f"architecture {arch!r} is not supported (attnviz opens {', '.join(ARCHITECTURES)})")
    _check_marian_choices(hf, file)
    try:
        return TransformerConfig(
            src_vocab_size=hf["vocab_size"],
            tgt_vocab_size=hf["vocab_size"],
            d_model=hf["d_model"],
            n_heads=hf["encoder_attention_heads"],
            n_encoder_layers=hf["encoder_layers"],
            n_decoder_layers=hf["decoder_layers"],
            d_ff=hf["encoder_ffn_dim"],
            dropout=float(hf.get("dropout", 0.1)),
            max_len=hf["max_position_embeddings"],
            norm="layer",
            norm_placement="post",
            final_norm=False,
            tie_embeddings=bool(hf.get("tie_word_embeddings", True)),
            norm_eps=1e-5,  # torch.nn.LayerNorm's, which Marian uses
            pad_id=hf["pad_token_id"],
            unk_id=unk_id,
            bos_id=hf.get("decoder_start_token_id", hf["pad_token_id"]),
            eos_id=hf["eos_token_id"],
            activation=_ACTIVATIONS[hf.get("activation_function", "gelu")],
            positional_layout="halves",
        )
    except KeyError as exc:
        raise HFImportError(file, f"field {exc.args[0]!r} is missing") from None
    except (ConfigError, TypeError, ValueError) as exc:
        raise HFImportError(file, f"cannot describe this model ({exc})") from None


def _check_marian_choices(hf: dict[str, Any], file: Path) -> None:
    """``HFImportError`` for a Marian variant the mapping would not reproduce exactly."""
    pairs = (("encoder_attention_heads", "decoder_attention_heads"), ("encoder_ffn_dim", "decoder_ffn_dim"))
    for a, b in pairs:
        if hf.get(a) != hf.get(b):
            raise HFImportError(file, f"{a} ({hf.get(a)!r}) and {b} ({hf.get(b)!r}) differ; attnviz needs them equal")
    if hf.get("scale_embedding") is not True:
        raise HFImportError(file, "scale_embedding must be true (attnviz scales embeddings by sqrt(d_model), as Marian's opus-mt models do)")
    if hf.get("share_encoder_decoder_embeddings", True) is not True or hf.get("decoder_vocab_size") not in (None, hf.get("vocab_size")):
        raise HFImportError(file, "separate source and target vocabularies are not supported (one shared vocab.json is)")
    activation = hf.get("activation_function", "gelu")
    if not isinstance(activation, str) or activation not in _ACTIVATIONS:
        raise HFImportError(file, f"activation {hf.get('activation_function')!r} is not supported (one of {', '.join(_ACTIVATIONS)})")
    if hf.get("normalize_before") or hf.get("add_final_layer_norm") or hf.get("normalize_embedding"):
        raise HFImportError(file, "pre-norm or extra LayerNorm Marian variants are not supported")


# -- weights ------------------------------------------------------------------------------------
def weights_limit(config: TransformerConfig) -> int:
    """The most bytes a weights file of a model of ``config`` may hold: every tensor it may store
    (ours, Marian's position tables, separate embeddings, an untied output layer) in float32."""
    with torch.device("meta"):
        ours = sum(t.numel() for t in Transformer(config).state_dict().values())
    vocab, d = max(config.src_vocab_size, config.tgt_vocab_size), config.d_model
    return 4 * (ours + 3 * vocab * d + vocab + 2 * config.max_len * d) + WEIGHTS_SLACK


def _read_weights(folder: Path, limit: int) -> dict[str, torch.Tensor]:
    """The tensors of ``model.safetensors`` (preferred) or ``pytorch_model.bin`` (tensors only: no
    code runs), each file at most ``limit`` bytes (checked before any tensor is read)."""
    file = folder / SAFETENSORS
    if file.exists() or file.is_symlink():
        _check_weights_size(file, limit)
        read_safetensors_header(file, HFImportError)  # every declared size against the file's, before reading
        try:
            return st_load(read_capped(file, limit, HFImportError))  # parses a header and raw tensors; never unpickles
        except (SafetensorError, ValueError) as exc:
            raise HFImportError(file, f"not a valid safetensors file ({str(exc).splitlines()[0][:160]})") from None
        except Exception as exc:  # noqa: BLE001 - the Rust parser can raise other errors on garbage
            raise HFImportError(file, f"not a valid safetensors file ({type(exc).__name__})") from None
    file = folder / PICKLED
    if not file.exists() and not file.is_symlink():
        raise HFImportError(folder, f"no weights ({SAFETENSORS} or {PICKLED})")
    _check_weights_size(file, limit)
    return _unpickled_tensors(file, read_capped(file, limit, HFImportError))


def _check_weights_size(file: Path, limit: int) -> None:
    size = regular_size(file, HFImportError)
    if size > limit:
        raise HFImportError(file, f"is {size:,} bytes, more than the {limit:,} the model config.json describes can need")


def _unpickled_tensors(file: Path, data: bytes) -> dict[str, torch.Tensor]:
    """The name -> tensor dictionary a ``pytorch_model.bin``'s bytes hold, through torch's safe unpickler."""
    try:
        with warnings.catch_warnings():  # torch warns about unusual pickle protocols: the refusal below is the one line
            warnings.simplefilter("ignore")
            state = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)  # refuses any object but tensors and containers
    except pickle.UnpicklingError as exc:
        if "global" in str(exc).lower():  # torch names the global (a function, a class) its safe unpickler refused
            raise HFImportError(file, "refused: it holds objects other than tensors (a pickle that could run code); nothing was run") from None
        raise HFImportError(file, "refused: not a readable PyTorch file of tensors (corrupt, or another format)") from None
    except Exception as exc:  # noqa: BLE001 - torch's reader raises many types on damaged or unusual files
        first = str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__
        raise HFImportError(file, f"refused: not a PyTorch file of tensors ({first})") from None
    if not isinstance(state, dict) or not all(isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in state.items()):
        raise HFImportError(file, "does not hold a name -> tensor dictionary")
    return state


def hf_state_dict(theirs: dict[str, torch.Tensor], config: TransformerConfig, where: Path) -> dict[str, torch.Tensor]:
    """``theirs`` (a ``MarianMTModel`` state dict) under our names, checked against a model of ``config``:
    every tensor present and explained by the config, each dense, of the right shape and finite,
    the sinusoidal positions attnviz recomputes equal to the checkpoint's; ``HFImportError`` otherwise."""
    theirs = {k.removeprefix("model."): v for k, v in theirs.items()}
    for key, tensor in theirs.items():
        _check_tensor_kind(key, tensor, where)
    ours: dict[str, torch.Tensor] = {}
    for key, tensor in theirs.items():
        name = _our_name(key)
        if name is not None:
            ours[name] = tensor
        elif _IGNORED.match(key):
            _check_positions(key, tensor, config, where)
        elif key not in _EMBEDDING_NAMES:
            raise HFImportError(where, f"unexpected tensor {key!r} (not a MarianMTModel's?)")
    ours.update(_embeddings(theirs, config, where))
    _check_shapes(ours, config, where)
    return ours


def _check_tensor_kind(key: str, tensor: torch.Tensor, where: Path) -> None:
    """``HFImportError`` for a tensor that holds no plain floating-point numbers (sparse, meta, float8, integers)."""
    if tensor.layout != torch.strided:
        raise HFImportError(where, f"tensor {key!r} is a sparse tensor ({tensor.layout}); attnviz reads dense weights only")
    if tensor.device.type == "meta":
        raise HFImportError(where, f"tensor {key!r} holds no values (a meta tensor)")
    if tensor.dtype not in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
        raise HFImportError(where, f"tensor {key!r} holds {tensor.dtype}, not float16, bfloat16, float32 or float64 numbers")


def _check_positions(key: str, tensor: torch.Tensor, config: TransformerConfig, where: Path) -> None:
    """``HFImportError`` unless Marian's stored position table is the one attnviz recomputes."""
    want = sinusoidal_encoding(config.max_len, config.d_model, layout=config.positional_layout)  # [max_len, d_model]
    if tuple(tensor.shape) != tuple(want.shape):
        raise HFImportError(where, f"tensor {key!r} has shape {tuple(tensor.shape)}, config.json implies {tuple(want.shape)}")
    if not torch.allclose(tensor.to(torch.float32), want, atol=POSITIONS_ATOL, rtol=0.0):
        worst = float((tensor.to(torch.float32) - want).abs().max())
        raise HFImportError(where, f"tensor {key!r} differs from the sinusoidal positions attnviz computes (by up to {worst:.3g}): "
                                   "not a standard Marian model")


_EMBEDDING_NAMES = ("shared.weight", "encoder.embed_tokens.weight", "decoder.embed_tokens.weight", "lm_head.weight", "final_logits_bias")


def _our_name(key: str) -> str | None:
    """Our name of one of a layer's tensors (``encoder.layers.0.fc1.weight`` -> ``encoder.layers.0.ffn.linear1.weight``)."""
    m = _LAYER.match(key)
    if m is None:
        return None
    stack, layer, part, kind = m.groups()
    if part == "final_layer_norm":
        return f"{stack}.layers.{layer}.{'norm3' if stack == 'decoder' else 'norm2'}.{kind}"
    for pattern, ours in _LAYER_NAMES:
        if re.fullmatch(pattern, part):
            return f"{stack}.layers.{layer}.{ours}.{kind}"
    return None


def _embeddings(theirs: dict[str, torch.Tensor], config: TransformerConfig, where: Path) -> dict[str, torch.Tensor]:
    """The embedding tables, the output layer (tied or not) and its bias (``final_logits_bias``)."""
    shared = theirs.get("shared.weight")
    src = theirs.get("encoder.embed_tokens.weight", shared)
    tgt = theirs.get("decoder.embed_tokens.weight", shared)
    if src is None or tgt is None:
        raise HFImportError(where, "no token embedding ('model.shared.weight') in the weights")
    out = {"encoder.embed.table.weight": src, "decoder.embed.table.weight": tgt}
    bias = theirs.get("final_logits_bias")
    if bias is None:  # transformers would start it at zeros; a MarianMTModel's checkpoint always holds it
        raise HFImportError(where, "tensor 'final_logits_bias' (the output layer's bias) is missing from the weights")
    out["generator.bias"] = bias.reshape(-1) if bias.dim() == 2 and bias.shape[0] == 1 else bias
    head = theirs.get("lm_head.weight")
    if not config.tie_embeddings:
        if head is None:
            raise HFImportError(where, "tie_word_embeddings is false but there is no 'lm_head.weight'")
        out["generator.weight"] = head
    elif head is not None and not torch.equal(head, tgt):
        raise HFImportError(where, "'lm_head.weight' differs from the embedding it is tied to (tie_word_embeddings)")
    return out


def _check_shapes(ours: dict[str, torch.Tensor], config: TransformerConfig, where: Path) -> None:
    with torch.device("meta"):
        expected = Transformer(config).state_dict()
    if config.tie_embeddings:
        expected.pop("generator.weight")
    missing, extra = sorted(set(expected) - set(ours)), sorted(set(ours) - set(expected))
    if missing:
        raise HFImportError(where, f"{len(missing)} tensor(s) missing from the weights, e.g. {missing[0]!r}")
    if extra:
        raise HFImportError(where, f"{len(extra)} tensor(s) that config.json does not explain, e.g. {extra[0]!r} "
                                   f"(its {config.n_encoder_layers}+{config.n_decoder_layers} layers hold no such tensor)")
    for name, want in expected.items():
        got = ours[name]
        if tuple(got.shape) != tuple(want.shape):
            raise HFImportError(where, f"tensor {name!r} has shape {tuple(got.shape)}, config.json implies {tuple(want.shape)}")
        if not got.is_floating_point():
            raise HFImportError(where, f"tensor {name!r} holds {got.dtype}, not floating-point numbers")
        if not torch.isfinite(got).all():
            raise HFImportError(where, f"tensor {name!r} holds NaN or infinite values")
        ours[name] = got.to(torch.float32)


# -- tokenizers ---------------------------------------------------------------------------------
def _read_tokenizers(folder: Path, config: TransformerConfig, vocab: dict[str, int]) -> tuple[VocabTokenizer, VocabTokenizer]:
    """Source (ends with EOS) and target tokenizers over the shared ``vocab.json``."""
    ids = dict(pad_id=config.pad_id, unk_id=config.unk_id, bos_id=config.bos_id, eos_id=config.eos_id)
    sides = []
    for name, append_eos in ((SOURCE_SPM, True), (TARGET_SPM, False)):
        file = folder / name
        if not file.exists() and not file.is_symlink():
            raise HFImportError(file, "missing (a Marian model folder needs source.spm, target.spm and vocab.json)")
        try:
            sides.append(VocabTokenizer(read_capped(file, SPM_LIMIT, HFImportError), vocab, append_eos=append_eos, **ids))
        except TokenizerError as exc:
            raise HFImportError(file, str(exc)) from None
    if sides[0].vocab_size != config.src_vocab_size:
        raise HFImportError(folder / VOCAB, f"holds {sides[0].vocab_size} pieces, config.json says vocab_size {config.src_vocab_size}")
    return sides[0], sides[1]
