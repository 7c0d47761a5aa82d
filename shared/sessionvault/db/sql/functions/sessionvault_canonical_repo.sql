-- One repo identity: every repo the server receives is canonicalized (core/repos.py), so the
-- rows saved before must be too, or a handoff saved as `git@github.com:Acme/App.git` is never
-- found as `github.com/acme/app`. repo is a plaintext column: nothing to decrypt.
--
-- This function is the SQL twin of core.repos.canonical_repo, used only here and kept so a
-- test can hold both to one table of real-world spellings (tests/integration/test_migrations).
CREATE OR REPLACE FUNCTION sessionvault_canonical_repo(raw text) RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT AS $$
DECLARE
    v text := btrim(raw, E' \t\n\r\f\v');
    m text[];
    host text;
    path text;
    netloc text;
BEGIN
    m := regexp_match(v, '^([A-Za-z][A-Za-z0-9+.-]*)://([^/?#]*)([^?#]*)');
    IF strpos(v, '://') > 0 AND m IS NOT NULL
       AND lower(m[1]) IN ('ssh', 'git', 'http', 'https', 'git+ssh', 'ssh+git', 'git+https', 'git+http') THEN
        netloc := regexp_replace(m[2], '^.*@', '');
        IF left(netloc, 1) = '[' THEN
            host := substr(netloc, 2, greatest(strpos(netloc, ']') - 2, 0));
        ELSE
            host := split_part(netloc, ':', 1);
        END IF;
        path := m[3];
    ELSIF strpos(v, '://') = 0 AND v ~ '^(?:[^@/\s]+@)?[^:/\s@]{2,}:[^\s]*$' THEN
        m := regexp_match(v, '^(?:[^@/\s]+@)?([^:/\s@]{2,}):([^\s]*)$');
        host := m[1];
        path := m[2];
    ELSIF strpos(v, '://') = 0 AND v ~* '^[a-z0-9-]+(?:\.[a-z0-9-]+)+/.+$' THEN
        m := regexp_match(v, '^([a-z0-9-]+(?:\.[a-z0-9-]+)+)/(.+)$', 'i');
        host := m[1];
        path := m[2];
    END IF;
    IF host IS NOT NULL THEN
        path := sessionvault_trim_repo_path(path);
        IF host <> '' AND path <> '' THEN
            host := lower(host);
            path := lower(path);
            IF host = 'ssh.dev.azure.com' AND left(path, 3) = 'v3/' THEN
                host := 'dev.azure.com';
                path := substr(path, 4);
            END IF;
            IF host = 'dev.azure.com' OR host LIKE '%.visualstudio.com' THEN
                path := replace(path, '/_git/', '/');
            END IF;
            RETURN host || '/' || path;
        END IF;
    END IF;
    IF left(v, 1) IN ('/', '~') OR left(v, 7) = 'file://' OR v ~ '^[A-Za-z]:[\\/]' THEN
        path := replace(regexp_replace(v, '^file://', ''), '\', '/');
        m := regexp_match(sessionvault_trim_repo_path(path), '([^/]*)$');
        RETURN coalesce(nullif(m[1], ''), path);
    END IF;
    RETURN rtrim(v, '/\');
END
$$;
