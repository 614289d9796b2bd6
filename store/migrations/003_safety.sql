-- Proposals: one row per (tenant, proposal id), decided once, ever
-- (docs/safety.md). question is the row of the approval asking for it now;
-- a proposal whose question ended undecided (superseded, cancelled, timed
-- out) may be asked again by a later question.
CREATE TABLE proposals (
    tenant          TEXT    NOT NULL,
    proposal_id     TEXT    NOT NULL,
    job_id          TEXT    NOT NULL,
    question        INTEGER NOT NULL REFERENCES questions (id),
    action          TEXT    NOT NULL,
    arguments       TEXT    NOT NULL DEFAULT '{}',
    expires_at      INTEGER NOT NULL DEFAULT 0,
    idempotency_key TEXT    NOT NULL,
    state           TEXT    NOT NULL,
    -- JSON list of bridge.Approval: who approved so far.
    approvals       TEXT    NOT NULL DEFAULT '[]',
    decided_at      INTEGER NOT NULL DEFAULT 0,
    executed_at     INTEGER NOT NULL DEFAULT 0,
    result          TEXT    NOT NULL DEFAULT '',
    detail          TEXT    NOT NULL DEFAULT '',
    reported_at     INTEGER NOT NULL DEFAULT 0,
    recorded_at     INTEGER NOT NULL,
    PRIMARY KEY (tenant, proposal_id)
) WITHOUT ROWID;
CREATE INDEX proposals_by_question ON proposals (question);

-- The job's audit trail beyond its questions' transitions: gate decisions,
-- refused attempts, approvals, executions, notices. body is JSON whose
-- shape the kind says (docs/design.md).
CREATE TABLE job_log (
    id          INTEGER PRIMARY KEY,
    tenant      TEXT    NOT NULL,
    job_id      TEXT    NOT NULL,
    kind        TEXT    NOT NULL,
    question_id TEXT    NOT NULL DEFAULT '',
    body        TEXT    NOT NULL DEFAULT '{}',
    at          INTEGER NOT NULL
);
CREATE INDEX job_log_by_job ON job_log (tenant, job_id, id);
