"""``attnviz import-hf DIR --out models/NAME``: a local Hugging Face ``MarianMTModel`` folder
(e.g. Helsinki-NLP's opus-mt-zh-en) converted into an attnviz model bundle. Nothing is downloaded."""

from __future__ import annotations

import argparse
from pathlib import Path

HELP = "convert a local Hugging Face MarianMTModel folder (e.g. opus-mt-zh-en) into a model bundle"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("folder", metavar="DIR", help="the Hugging Face folder: config.json, model.safetensors or pytorch_model.bin, source.spm, target.spm, vocab.json")
    p.add_argument("--out", required=True, metavar="DIR", help="the bundle folder to write (e.g. models/opus-mt-zh-en)")


def run(args: argparse.Namespace) -> int:
    from attnviz.core.bundle import META, save_bundle
    from attnviz.core.model.hf_import import read_hf_folder
    from attnviz.errors import CommandError

    src, out = Path(args.folder), Path(args.out)
    if out.exists() and (out.resolve() == src.resolve() or not (out / META).is_file()):
        raise CommandError(f"{out}: already exists and is not a model bundle; choose a new folder for --out", code=2)
    imported = read_hf_folder(src)
    save_bundle(out, imported.model, imported.src_tokenizer, imported.tgt_tokenizer, imported.meta)
    print(f"saved {out} ({imported.meta['architecture']}: {imported.model.config.describe()})")
    return 0
