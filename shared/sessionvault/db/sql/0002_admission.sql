-- Rate limits become counters per user, budget and time slot, so a check costs the same
-- whatever the day's volume; the audit row is written at admission (see 0003).

-- Sliding windows as fixed slots: the minute window sums the 12 five-second slots of the last
-- minute, the day window the 24 one-hour slots of the last day: at most 36 rows per check.
CREATE TABLE rate_counters (
    user_id uuid NOT NULL,
    budget  text NOT NULL CHECK (budget IN ('tool', 'protocol')),
    span    text NOT NULL CHECK (span IN ('minute', 'day')),
    slot    timestamptz NOT NULL,
    hits    integer NOT NULL,
    PRIMARY KEY (user_id, budget, span, slot)
);
CREATE INDEX rate_counters_slot ON rate_counters (slot);

ALTER TABLE rate_counters ENABLE ROW LEVEL SECURITY;
ALTER TABLE rate_counters FORCE ROW LEVEL SECURITY;
CREATE POLICY rate_counters_tenant ON rate_counters
    USING (user_id = app_current_user_id()) WITH CHECK (user_id = app_current_user_id());

GRANT SELECT, INSERT, UPDATE ON rate_counters TO sessionvault_app;
GRANT SELECT, INSERT, UPDATE, DELETE ON rate_counters TO sessionvault_admin;

DROP TABLE rate_limit_events;

-- The audit row is written at admission; a call that then fails records its error class and
-- latency on that row (the serving role may change only those columns, of its own rows).
ALTER TABLE audit_events ALTER COLUMN latency_ms DROP NOT NULL;
GRANT SELECT (id), UPDATE (outcome, error_class, latency_ms) ON audit_events TO sessionvault_app;

-- sessionvault_admit, the one-statement admission, is defined by 0003 (with the definer key lookup).
