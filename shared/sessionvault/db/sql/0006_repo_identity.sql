-- One repo identity: every repo the server receives is canonicalized (core/repos.py), so the
-- rows saved before must be too, or a handoff saved as `git@github.com:Acme/App.git` is never
-- found as `github.com/acme/app`. repo is a plaintext column: nothing to decrypt.
--
-- This function is the SQL twin of core.repos.canonical_repo, used only here and kept so a
-- test can hold both to one table of real-world spellings (tests/integration/test_migrations).
CREATE FUNCTION sessionvault_canonical_repo(raw text) RETURNS text
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

CREATE FUNCTION sessionvault_trim_repo_path(path text) RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT AS $$
BEGIN
    path := btrim(path, '/');
    WHILE right(path, 4) = '.git' OR right(path, 1) = '/' LOOP
        path := rtrim(left(path, length(path) - CASE WHEN right(path, 4) = '.git' THEN 4 ELSE 0 END), '/');
    END LOOP;
    RETURN regexp_replace(path, '/{2,}', '/', 'g');
END
$$;

-- The listing's MAC covers the repo as it was saved: a row whose spelling changes here keeps
-- that spelling in saved_repo (NULL = repo), so its MAC still verifies and nothing is withheld.
ALTER TABLE sessions ADD COLUMN saved_repo text;

-- Every stored spelling made canonical. The owner is bound by FORCE like everyone (a
-- non-superuser owner on Neon or RDS): RLS is lifted inside this one transaction, which holds
-- the tables' exclusive locks until it commits. A function, so the test of this migration runs
-- the very statements it runs.
CREATE FUNCTION sessionvault_canonicalize_repos() RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    ALTER TABLE sessions NO FORCE ROW LEVEL SECURITY;
    ALTER TABLE sessions DISABLE ROW LEVEL SECURITY;
    UPDATE sessions SET saved_repo = coalesce(saved_repo, repo), repo = sessionvault_canonical_repo(repo)
    WHERE repo <> sessionvault_canonical_repo(repo);
    ALTER TABLE sessions ENABLE ROW LEVEL SECURITY;
    ALTER TABLE sessions FORCE ROW LEVEL SECURITY;

    ALTER TABLE handoffs NO FORCE ROW LEVEL SECURITY;
    ALTER TABLE handoffs DISABLE ROW LEVEL SECURITY;
    UPDATE handoffs SET repo = sessionvault_canonical_repo(repo) WHERE repo <> sessionvault_canonical_repo(repo);
    ALTER TABLE handoffs ENABLE ROW LEVEL SECURITY;
    ALTER TABLE handoffs FORCE ROW LEVEL SECURITY;
END
$$;
REVOKE ALL ON FUNCTION sessionvault_canonicalize_repos() FROM PUBLIC;

SELECT sessionvault_canonicalize_repos();
