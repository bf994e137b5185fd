"""Hugging Face model families, one module each (``marian``, ``bart``, ``t5``, ``gpt2``, ``bert``): what a family's
``config.json`` looks like, its attnviz config, its weight names and its tokenizers.
``attnviz.core.model.hf_import`` picks the family of a folder and reads it."""
