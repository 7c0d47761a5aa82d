"""The server on this machine: embedded PostgreSQL, the background service, the state lock,
the master key and its rotation, backup and restore, local upkeep, which database a command uses."""
