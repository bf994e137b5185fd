"""attnviz's core: the instrumented Transformer, its data, training and analyses. Never imports Qt.

The short public API below is loaded on first use, so that importing a pure-numpy part of the
core (``attnviz.core.analysis.positional``, say) does not import torch.
"""

from __future__ import annotations

import importlib

_PUBLIC = {
    "ConfigError": "attnviz.core.model.config",
    "TransformerConfig": "attnviz.core.model.config",
    "import_torch_transformer": "attnviz.core.model.importer",
    "DecoderCache": "attnviz.core.model.transformer",
    "Encoded": "attnviz.core.model.transformer",
    "Transformer": "attnviz.core.model.transformer",
    "look_ahead_mask": "attnviz.core.model.modules",
    "sinusoidal_encoding": "attnviz.core.model.modules",
    "Recorder": "attnviz.core.model.trace",
    "Trace": "attnviz.core.model.trace",
    "schema_table": "attnviz.core.model.trace",
    "trace_names": "attnviz.core.model.trace",
    "trace_schema": "attnviz.core.model.trace",
}
__all__ = sorted(_PUBLIC)


def __getattr__(name: str):
    if name in _PUBLIC:
        return getattr(importlib.import_module(_PUBLIC[name]), name)
    raise AttributeError(f"module 'attnviz.core' has no attribute {name!r}")
