"""What the web page's tests share: the page command as a function, headless Chromium, the
tutorial's sentence and the page's size budget."""

from __future__ import annotations

import argparse
import shutil
import subprocess

from attnviz.commands import page as page_command

TUTORIAL = "尽管今天下了雨，但我因为拿到了梦寐以求的工作offer而感到非常开心和兴奋。"  # the tutorial's sentence (README, the tour)
MAX_PAGE_BYTES = 2_000_000


def run_page(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="attnviz page")
    page_command.add_arguments(parser)
    return page_command.run(parser.parse_args(argv))


def chromium(*args: str) -> bytes:
    exe = shutil.which("chromium")
    assert exe, "chromium is missing: install Debian's chromium package (.ci/run does)"
    done = subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", *args],
                          capture_output=True, timeout=60, check=True)
    return done.stdout
