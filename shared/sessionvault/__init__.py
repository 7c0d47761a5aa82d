"""SessionVault: save a structured work session from one AI client, load it from another."""

__version__ = "0.1.0"
