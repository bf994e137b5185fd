"""The commands' ``--json`` output: strict JSON, or one line saying the model is broken."""

from __future__ import annotations

import json

from attnviz.errors import CommandError


def strict_json(data: dict, indent: int | None = None) -> str:
    """``data`` as strict JSON (no NaN or infinity); ``CommandError`` when it holds them (a broken model)."""
    try:
        return json.dumps(data, ensure_ascii=False, indent=indent, allow_nan=False)
    except ValueError:
        raise CommandError("the model gave NaN or infinite values: its weights are broken; retrain it or use another") from None
