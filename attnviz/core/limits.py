"""Limits that commands, the window and runs share, in a module that imports nothing heavy (the
command line's parser reads them before torch is loaded)."""

MAX_THREADS = 1024  # torch CPU threads any command or run may ask for (decoding, evaluation, training)
