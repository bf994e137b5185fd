"""``attnviz export`` refuses, in one line and before any work, a PNG too large to draw: ``--size``
scaled by ``--dpi`` or ``--width`` past the PNG width limit on either side (issue 25, case 9)."""

from __future__ import annotations

import pytest

from attnviz.cli import main


def one_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("attnviz: error: ") and "Traceback" not in err, err
    return err


@pytest.mark.parametrize("options, pixels", [
    (["--size", "10000x10000", "--dpi", "1200"], "125,000 x 125,000"),
    (["--size", "100x10000", "--width", "20000"], "20,000 x 2,000,000"),
])
def test_an_export_too_large_to_draw_is_one_line(tmp_path, capsys, options, pixels):
    out = tmp_path / "figures"
    assert main(["export", "--src", "我是学生。", "--out", str(out), *options]) == 2
    assert f"makes a PNG of {pixels} pixels" in one_line(capsys) and not out.exists()  # the CLI's stderr: data, not UI text
