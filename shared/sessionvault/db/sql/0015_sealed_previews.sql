-- Sealed previews (issue 27, item 10: what a database reader sees). A listing shows the first
-- 120 characters of each session's summary; until now they sat in `sessions.preview` as
-- plaintext, readable by anyone who could read the table (a backup, a replica, an operator, an
-- injection). A save now stores them sealed instead: AES-256-GCM under the tenant's data key,
-- nonce (12 bytes) || ciphertext || tag in one column, the associated data binding the user,
-- the head version's seal_id and the name under a label of its own (core/crypto.py
-- `preview_aad`), so a sealed preview opens in no other row and never as a record. The head's
-- MAC still covers the preview's text, whichever way it is stored.
--
-- `preview` stays for the rows saved before: '' once a preview is sealed. A row with a
-- plaintext preview and no sealed one lists as before; the maintenance task `seal_previews`
-- (jobs/maintenance.py) seals them and empties the plaintext column.

ALTER TABLE sessions ADD COLUMN sealed_preview bytea;

-- The task runs as the maintenance role: it may write these two columns and no other new one.
GRANT UPDATE (preview, sealed_preview) ON sessions TO sessionvault_maint;
