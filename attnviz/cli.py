"""The command line: ``attnviz`` opens the app; ``attnviz train|translate|evaluate|trace|ablate|head-importance|patch|attribute|export|import-hf`` work headless.

Each subcommand lives in ``attnviz/commands/<name>.py`` with ``HELP``, ``add_arguments(parser)``
and ``run(args) -> int``; this module only wires them and turns expected errors into one line.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from attnviz.errors import AttnvizError

COMMANDS = ("gui", "train", "translate", "evaluate", "trace", "ablate", "head-importance", "patch", "circuit", "attribute", "logit-attribution", "contributions", "heads", "neighbours", "qk", "export", "animate", "page", "import-hf", "tour")  # module: the name with "_" for "-"


def _available() -> dict[str, object]:
    mods = {}
    for name in COMMANDS:
        module = f"attnviz.commands.{name.replace('-', '_')}"
        try:
            mods[name] = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise
    return mods


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, object]]:
    from attnviz import __version__

    mods = _available()
    parser = argparse.ArgumentParser(
        prog="attnviz",
        description="Watch attention work inside an encoder-decoder Transformer. Without a command, opens the desktop app.",
    )
    parser.add_argument("--version", action="version", version=f"attnviz {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, mod in mods.items():
        p = sub.add_parser(name, help=mod.HELP, description=mod.HELP)
        mod.add_arguments(p)
    if "gui" in mods:  # the app's options also work without the word "gui"
        mods["gui"].add_arguments(parser)
    return parser, mods


def main(argv: Sequence[str] | None = None) -> int:
    parser, mods = build_parser()
    args = parser.parse_args(argv)
    command = args.command or "gui"
    try:
        return int(mods[command].run(args) or 0)
    except AttnvizError as exc:
        print(f"attnviz: error: {exc}", file=sys.stderr)
        return exc.code
    except KeyboardInterrupt:
        print("attnviz: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
