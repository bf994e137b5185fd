"""attnviz's desktop front end (PySide6 + pyqtgraph). Renders core data objects; never computes the model."""
