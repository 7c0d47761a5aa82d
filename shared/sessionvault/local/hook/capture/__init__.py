"""Automatic checkpoints: a client's own transcript read on the laptop, without any model, and
saved as a session when work ends (compaction, stop, session end)."""
