"""attnviz: watch attention work inside an encoder-decoder Transformer."""

__version__ = "0.1.0"
