"""Putting SessionVault into clients: config entries (`registry`, `files`, `jsonc`, `toml`),
hooks (`hooks`), the command path (`command`, `link`, `profile`) and `doctor`."""
