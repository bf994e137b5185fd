"""attnviz's core: the instrumented Transformer, its data, training and analyses. Never imports Qt."""

from .config import ConfigError, TransformerConfig
from .importer import import_torch_transformer
from .model import DecoderCache, Encoded, Transformer
from .modules import look_ahead_mask, sinusoidal_encoding
from .trace import Recorder, Trace, schema_table, trace_names, trace_schema

__all__ = [
    "ConfigError",
    "DecoderCache",
    "Encoded",
    "Recorder",
    "Trace",
    "Transformer",
    "TransformerConfig",
    "import_torch_transformer",
    "look_ahead_mask",
    "schema_table",
    "sinusoidal_encoding",
    "trace_names",
    "trace_schema",
]
