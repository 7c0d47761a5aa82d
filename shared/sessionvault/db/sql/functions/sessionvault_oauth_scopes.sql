-- The scopes in both lists, in the canonical order.
CREATE OR REPLACE FUNCTION sessionvault_oauth_scopes(p_a text[], p_b text[])
RETURNS text[] LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog
AS $$ SELECT ARRAY(SELECT s FROM unnest(ARRAY['read', 'write', 'delete']) WITH ORDINALITY AS t (s, n)
                   WHERE s = ANY (p_a) AND s = ANY (p_b) ORDER BY n) $$;
