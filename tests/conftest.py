import os

# Must be set before any QApplication exists (pytest-qt creates one lazily).
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import torch  # noqa: E402

torch.set_num_threads(1)
