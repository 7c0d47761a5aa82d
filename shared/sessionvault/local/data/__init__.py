"""Sessions as files: export writing, the readable text and diffs, importers from other tools."""
