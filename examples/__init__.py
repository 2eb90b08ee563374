"""Examples, importable from the repository root (``mara bench --agents examples.custom_scheduler:CappedEDF``)."""
