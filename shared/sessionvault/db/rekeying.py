"""Re-encrypting every version of one user's sessions under a fresh data key, in one
transaction that holds the user's usage row (see `jobs.rekey`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sessionvault.db import terms, vectors
from sessionvault.db.pool import Connection, Database
from sessionvault.db.saves import ENSURE_USAGE
from sessionvault.db.sessions import Row

_ALL_VERSIONS = """
SELECT s.id, s.name, coalesce(s.saved_repo, s.repo) AS repo, s.client, s.preview, s.sealed_preview,
       s.version AS head, s.embedding_model, s.sealed_vector,
       coalesce(s.seal_id::text, s.id::text || ':' || s.version) AS binding,
       v.version, v.seal_id, v.nonce, v.ciphertext
FROM sessions s JOIN session_versions v ON v.session_id = s.id
WHERE s.user_id = %(user_id)s
FOR UPDATE OF v
"""

_RESEAL = "UPDATE session_versions SET nonce = %s, ciphertext = %s WHERE session_id = %s AND version = %s"
# A head's preview is sealed under the new key (a plaintext one from before 0015 included).
_RESEAL_HEAD = (
    "UPDATE sessions SET meta_mac = %s, sealed_preview = %s, preview = '', sealed_vector = %s WHERE id = %s"
)


@dataclass(frozen=True)
class HeadSeal:
    """What a head row holds that the data key made: its MAC, its sealed preview, its terms,
    its sealed vector (None: it has none)."""

    mac: bytes
    preview: bytes
    terms: terms.Terms
    vector: bytes | None


def reencrypt(
    db: Database,
    user_id: str,
    reseal: Callable[[Row], tuple[bytes, bytes, HeadSeal | None]],
    new_fp: bytes,
    switch_key: Callable[[Connection], None],
) -> int:
    """Every version of the user's sessions through `reseal(row)` -> (nonce, ciphertext, and
    for a head's version its new MAC, sealed preview and terms, None for older versions), then
    `switch_key(conn)`, all in one transaction that holds the user's usage row: saves wait, and
    one that read the old key before is refused (`dek_fp`). Returns the number of versions
    re-encrypted."""

    def work(conn: Connection) -> int:
        conn.execute(ENSURE_USAGE, {"user_id": user_id})
        conn.execute("SELECT 1 FROM user_usage WHERE user_id = %s FOR UPDATE", (user_id,)).fetchone()
        rows = conn.execute(_ALL_VERSIONS, {"user_id": user_id}).fetchall()
        for row in rows:
            nonce, ciphertext, head = reseal(row)
            conn.execute(_RESEAL, (nonce, ciphertext, row["id"], row["version"]))
            if head is not None:
                conn.execute(_RESEAL_HEAD, (head.mac, head.preview, head.vector, row["id"]))
                terms.replace(conn, user_id, row, head.terms)
        vectors.drop_segments(conn, user_id)  # sealed under the old key: the next compaction remakes them
        conn.execute("UPDATE user_usage SET dek_fp = %s WHERE user_id = %s", (new_fp, user_id))
        switch_key(conn)
        return len(rows)

    with db.tenant(user_id) as conn:
        return work(conn)
