"""``attnviz import-hf DIR --out models/NAME``: a local Hugging Face model folder of a family attnviz
opens (Marian, BART, mBART, T5, mT5, GPT-2, BERT: ``core/model/families/``; e.g. Helsinki-NLP's opus-mt-zh-en)
converted into an attnviz model bundle. Nothing is downloaded.

``--out`` follows the rule of every command that writes a model folder: a new or empty folder,
or (with ``--force``) an attnviz bundle, which ``checkpoint.folder_kind`` recognises; anything
else (a folder holding other files, a bundle a user added files to, a symbolic link, a file) is
refused with or without ``--force`` and left exactly as it was. The import owns ``--out`` while
it writes (``folder_lock.output_lock``)."""

from __future__ import annotations

import argparse
from pathlib import Path

HELP = "convert a local Hugging Face model folder (Marian, BART, mBART, T5, mT5, GPT-2, BERT; e.g. opus-mt-zh-en) into a model bundle"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("folder", metavar="DIR", help="the Hugging Face folder: config.json, model.safetensors or pytorch_model.bin, and the tokenizer files "
                                               "(Marian: source.spm, target.spm, vocab.json; BART: vocab.json, merges.txt; mBART: sentencepiece.bpe.model; T5: spiece.model; "
                                               "GPT-2: vocab.json, merges.txt; BERT: vocab.txt)")
    p.add_argument("--out", required=True, metavar="DIR", help="the bundle folder to write (e.g. models/opus-mt-zh-en): a new or empty folder")
    p.add_argument("--src-lang", metavar="CODE", help="the source language of a multilingual model (mBART: e.g. zh_CN; default: the folder's tokenizer_config.json)")
    p.add_argument("--tgt-lang", metavar="CODE", help="the target language, forced as the first generated token (mBART: e.g. en_XX)")
    p.add_argument("--force", action="store_true", help="replace the attnviz bundle --out holds (a folder holding anything else is never replaced)")


def check_out(out: Path, force: bool) -> None:
    """``CommandError`` (exit status 2) unless the bundle may be written in ``out``."""
    from attnviz.core.training.checkpoint import folder_kind
    from attnviz.errors import CommandError

    if out.is_symlink():
        raise CommandError(f"--out {out} is a symbolic link; attnviz writes a bundle only into a real folder (name the folder itself, or a new one)", code=2)
    kind = folder_kind(out)
    if kind == "file":
        raise CommandError(f"--out {out} is a file, not a folder; choose a folder for the model bundle", code=2)
    if kind == "foreign":
        raise CommandError(f"--out {out} holds files that are not an attnviz model bundle; attnviz never replaces them, "
                           "with or without --force: choose a new or empty folder", code=2)
    if kind == "bundle" and not force:
        raise CommandError(f"--out {out} already holds a model bundle; use --force to replace it", code=2)


def run(args: argparse.Namespace) -> int:
    from attnviz.core.bundle import save_bundle
    from attnviz.core.folder_lock import output_lock
    from attnviz.core.model.hf_import import read_hf_folder

    src, out = Path(args.folder), Path(args.out)
    with output_lock(out, "import-hf"):
        check_out(out, args.force)
        imported = read_hf_folder(src, src_lang=args.src_lang, tgt_lang=args.tgt_lang)
        check_out(out, args.force)  # again: a user may have added a file while the weights were read
        save_bundle(out, imported.model, imported.src_tokenizer, imported.tgt_tokenizer, imported.meta)
    print(f"saved {out} ({imported.meta['architecture']}: {imported.model.config.describe()})")
    return 0
