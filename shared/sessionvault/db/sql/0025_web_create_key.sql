-- Creating a key in the web view (issue 37, item 7): a person signed in with a key that has the
-- delete scope (the scope that manages keys, as for revoking one) may make another key for
-- themselves, with at most the scopes of the key they signed in with. The key itself is made
-- and shown once by the application; the database gets its SHA-256 and display prefix only,
-- through sessionvault_web_create_key (db/sql/functions/), owned by sessionvault_web, which may
-- now insert those columns and nothing else: never a key for another user, never a scope the
-- signed-in key lacks.
GRANT INSERT (user_id, key_hash, key_prefix, label, scopes) ON api_keys TO sessionvault_web;
-- The insert's own check that keys belong to people (sessionvault_check_kinds, a trigger that
-- runs as the inserting role) reads the user's kind.
GRANT SELECT (kind) ON users TO sessionvault_web;
