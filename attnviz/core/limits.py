"""Limits that commands, the window and runs share, in a module that imports nothing heavy (the
command line's parser reads them before torch is loaded)."""

MAX_THREADS = 1024  # torch CPU threads any command or run may ask for (decoding, evaluation, training)
CORPUS_PAIRS = 200  # held-out pairs the head roles are measured over unless told
INDEX_PAIRS = 2000  # training pairs in a neighbours' index unless told
NEIGHBOURS = 5  # nearest training sentences shown unless told
MAX_HELD_OUT = 500  # held-out pairs that may join a sentence in the queries-and-keys picture
