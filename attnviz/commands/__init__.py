"""One module per ``attnviz`` subcommand (see ``attnviz/cli.py``)."""
