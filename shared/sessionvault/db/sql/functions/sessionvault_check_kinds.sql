-- Kinds hold where rows are made: keys belong to people, memberships join a person to a workspace.
CREATE OR REPLACE FUNCTION sessionvault_check_kinds() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, public AS $$
BEGIN
    IF TG_TABLE_NAME = 'api_keys' THEN
        IF (SELECT kind FROM users WHERE id = NEW.user_id) <> 'person' THEN
            RAISE EXCEPTION 'a workspace has no API keys' USING ERRCODE = 'check_violation';
        END IF;
    ELSIF (SELECT kind FROM users WHERE id = NEW.workspace_id) <> 'workspace'
       OR (SELECT kind FROM users WHERE id = NEW.user_id) <> 'person' THEN
        RAISE EXCEPTION 'a membership joins a person to a workspace' USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END $$;
