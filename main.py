"""Thin launcher: ``python main.py`` opens the attnviz desktop app."""

import sys

from attnviz.cli import main

if __name__ == "__main__":
    sys.exit(main())
