-- Admission riding on the tool's own transaction (db/admission.py `Ride`, issue #21): on a warm
-- instance that admitted this credential before, the server already knows whose it is, so the
-- admission opens the tool's tenant transaction instead of costing a flight of its own.
--
-- sessionvault_admit_as is sessionvault_admit (0008) given what the server expects the
-- credential to be: its user, that user's wrapped data key, and a scope the tool needs. It
-- leaves the tenant set only when it admits: a refused or rate-limited call's statements that
-- follow in the same transaction see no row and can write none (fail closed). When the
-- credential is live but no longer what the server expected ('stale': another wrapping of the
-- data key after a rotation, another scope), it writes nothing and sets no tenant; the server
-- then admits the call the ordinary way and runs it again.
--
-- sessionvault_admit turns synchronous_commit off for its transaction (a counter row may be
-- lost in a crash); riding, that transaction is the tool's, whose save must be durable: the
-- setting the session had is put back.
--
-- Riding, the user's admission lock and rate-counter rows are held until the tool's COMMIT,
-- not only for the admission statement: the user's calls wait for each other's transactions.
-- A lock wait in it is bounded (lock_timeout 2 s, local to the transaction): a call stuck
-- behind a long transaction of the same user (a re-key holds the usage row throughout) fails
-- with "try again" instead of holding up every other call of that user until the statement
-- timeout.

CREATE FUNCTION sessionvault_admit_as(
    p_user_id uuid,
    p_dek_wrapped bytea,
    p_scope text,
    p_key_hash bytea,
    p_resource text,
    p_budget text,
    p_per_minute integer,
    p_per_day integer,
    p_request_id text,
    p_tool text,
    p_ip_hash bytea,
    p_ua_hash bytea
) RETURNS TABLE (
    status text,              -- as sessionvault_admit's, or 'stale'
    user_id uuid,
    dek_wrapped bytea,
    key_id text,
    scopes text[],
    full_window text,
    window_limit integer,
    retry_after integer,
    audit_id bigint
)
LANGUAGE plpgsql
SET search_path = public, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    k record;
    a record;
    v_sync text := current_setting('synchronous_commit');
BEGIN
    PERFORM set_config('lock_timeout', '2s', true);
    SELECT * INTO k FROM sessionvault_key(p_key_hash, p_resource);
    IF k.status = 'ok' AND (k.user_id <> p_user_id OR k.dek_wrapped <> p_dek_wrapped
                            OR NOT coalesce(p_scope = ANY (k.scopes), false)) THEN
        status := 'stale';
        RETURN NEXT;
        RETURN;
    END IF;

    SELECT * INTO a FROM sessionvault_admit(p_key_hash, p_resource, p_budget, p_per_minute, p_per_day,
                                            p_request_id, p_tool, p_ip_hash, p_ua_hash);
    PERFORM set_config('synchronous_commit', v_sync, true);
    IF a.status <> 'ok' THEN
        PERFORM set_config('app.user_id', '', true);  -- a rate-limited call set it for its audit row
    END IF;
    status := a.status;
    user_id := a.user_id;
    dek_wrapped := a.dek_wrapped;
    key_id := a.key_id;
    scopes := a.scopes;
    full_window := a.full_window;
    window_limit := a.window_limit;
    retry_after := a.retry_after;
    audit_id := a.audit_id;
    RETURN NEXT;
END;
$$;

REVOKE ALL ON FUNCTION
    sessionvault_admit_as(uuid, bytea, text, bytea, text, text, integer, integer, text, text, bytea, bytea)
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION
    sessionvault_admit_as(uuid, bytea, text, bytea, text, text, integer, integer, text, text, bytea, bytea)
    TO sessionvault_app;
