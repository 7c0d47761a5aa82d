-- Who claimed a handoff, as the server knows it: the claiming API key's display prefix
-- (sv_live_ and four characters, as `key list` shows it) or "oauth" for an OAuth token. The
-- `accepted_by` client name beside it is self-declared by the caller; this is not.
ALTER TABLE handoffs ADD COLUMN accepted_with text;
