-- Every stored spelling made canonical. The owner is bound by FORCE like everyone (a
-- non-superuser owner on Neon or RDS): RLS is lifted inside this one transaction, which holds
-- the tables' exclusive locks until it commits. A function, so the test of this migration runs
-- the very statements it runs.
CREATE OR REPLACE FUNCTION sessionvault_canonicalize_repos() RETURNS void
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
