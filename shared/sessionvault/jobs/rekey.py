"""Re-keying, after a suspected compromise: each user gets a fresh data key and every version
of their sessions is re-encrypted under it (rotation only re-wraps the same key; this replaces
it). One transaction per user, so a user is either wholly under the old key or wholly under
the new one; a run that stops resumes with the users keyed before it began."""

from __future__ import annotations

import json
import logging
from datetime import datetime
from typing import Any

from sessionvault.core import crypto
from sessionvault.db import identity, rekeying
from sessionvault.db.pool import Connection
from sessionvault.db.saves import Head
from sessionvault.errors import DecryptionFailed
from sessionvault.runtime import Runtime
from sessionvault.service import sealing, vector_index

log = logging.getLogger(__name__)


def rekey_user(rt: Runtime, user_id: str) -> int:
    """Give one user a fresh data key; returns how many versions were re-encrypted."""
    old_dek = rt.keys.provider.unwrap(user_id, identity.wrapped_key(rt.db, user_id))
    new_dek, new_wrapped = rt.keys.provider.generate_data_key(user_id)

    def reseal(row: dict[str, Any]) -> tuple[bytes, bytes, rekeying.HeadSeal | None]:
        aad = sealing.aad_of(user_id, row)  # the same binding (v1 or v2), under the new key
        plaintext = crypto.unseal(old_dek, row["nonce"], row["ciphertext"], aad)
        nonce, ciphertext = crypto.seal(new_dek, plaintext, aad)
        if row["version"] != row["head"]:
            return nonce, ciphertext, None
        # The head's preview, sealed under the new key (a plaintext one too: migration 0015).
        preview = sealing.preview_of(old_dek, user_id, row)
        if preview is None:  # a changed preview stops this user's re-key, as a changed version does
            raise DecryptionFailed()
        head = Head(row["name"], row["repo"], preview, row["client"], None, None)
        mac = sealing.head_mac(new_dek, user_id, row, head)
        # Its search terms, keyed under the new key (tokens under the old one would match nothing).
        indexed = sealing.terms_of(new_dek, user_id, json.loads(plaintext))
        sealed_preview = sealing.seal_preview(new_dek, user_id, row, preview)
        # Its vector, sealed again under the new key (the same binding: its version and model).
        vector = None
        if row["sealed_vector"] is not None:
            vector = vector_index.reseal_vector(old_dek, new_dek, user_id, row["embedding_model"], row)
        return nonce, ciphertext, rekeying.HeadSeal(mac, sealed_preview, indexed, vector)

    def switch(conn: Connection) -> None:
        identity.replace_wrapped_key(conn, user_id, new_wrapped)

    return rekeying.reencrypt(rt.db, user_id, reseal, crypto.fingerprint(new_dek), switch)


def rekey_all(rt: Runtime, before: datetime) -> dict[str, int]:
    """Re-key every user whose data key is older than `before` (the run's start: pass the same
    moment again to resume). A user that fails is logged and left for the next run."""
    done = versions = failed = 0
    for user_id in identity.users_keyed_before(rt.db, before):
        try:
            versions += rekey_user(rt, user_id)
            done += 1
        except Exception as exc:  # one unreadable user must not stop everyone else's re-key
            failed += 1
            log.error("re-key skipped a user", extra={"user_id": user_id, "error_type": type(exc).__name__})
    left = len(identity.users_keyed_before(rt.db, before))
    return {"rekeyed_users": done, "reencrypted_versions": versions, "failed": failed, "remaining": left}
