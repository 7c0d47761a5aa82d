"""What runs inside a client's hooks: the session-start text (`session_start`), the drift
lines (`drift`), the repo rule (`repo`) and automatic checkpoints (`capture/`)."""
