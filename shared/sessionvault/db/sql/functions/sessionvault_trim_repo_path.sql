CREATE OR REPLACE FUNCTION sessionvault_trim_repo_path(path text) RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT AS $$
BEGIN
    path := btrim(path, '/');
    WHILE right(path, 4) = '.git' OR right(path, 1) = '/' LOOP
        path := rtrim(left(path, length(path) - CASE WHEN right(path, 4) = '.git' THEN 4 ELSE 0 END), '/');
    END LOOP;
    RETURN regexp_replace(path, '/{2,}', '/', 'g');
END
$$;
