-- Jobs: the current task version of each job.
CREATE TABLE jobs (
    tenant       TEXT    NOT NULL,
    job_id       TEXT    NOT NULL,
    task_version INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL,
    PRIMARY KEY (tenant, job_id)
) WITHOUT ROWID;

-- Questions: one row per (tenant, job, question, task version).
CREATE TABLE questions (
    id           INTEGER PRIMARY KEY,
    tenant       TEXT    NOT NULL,
    job_id       TEXT    NOT NULL,
    question_id  TEXT    NOT NULL,
    task_version INTEGER NOT NULL,
    kind         TEXT    NOT NULL,
    body         TEXT    NOT NULL,
    state        TEXT    NOT NULL,
    asked_at     INTEGER NOT NULL,
    deadline     INTEGER NOT NULL,
    action       TEXT    NOT NULL DEFAULT '',
    answer_raw   TEXT    NOT NULL DEFAULT '',
    answer       TEXT    NOT NULL DEFAULT '',
    answer_text  TEXT    NOT NULL DEFAULT '',
    comment      TEXT    NOT NULL DEFAULT '',
    by_id        TEXT    NOT NULL DEFAULT '',
    by_name      TEXT    NOT NULL DEFAULT '',
    via          TEXT    NOT NULL DEFAULT '',
    text         TEXT    NOT NULL DEFAULT '',
    settled_at   INTEGER NOT NULL DEFAULT 0,
    UNIQUE (tenant, job_id, question_id, task_version)
);
CREATE INDEX questions_by_state ON questions (state, tenant, id);
CREATE INDEX questions_by_job ON questions (tenant, job_id, state);
CREATE INDEX questions_by_qid ON questions (question_id);

-- Ladder steps and timeouts still to fire, by due time.
CREATE TABLE steps (
    question INTEGER NOT NULL REFERENCES questions (id),
    idx      INTEGER NOT NULL,
    target   TEXT    NOT NULL,
    due      INTEGER NOT NULL,
    PRIMARY KEY (question, idx)
) WITHOUT ROWID;
CREATE INDEX steps_by_due ON steps (due);

-- Every transition of every question.
CREATE TABLE audit (
    id         INTEGER PRIMARY KEY,
    question   INTEGER NOT NULL REFERENCES questions (id),
    from_state TEXT    NOT NULL,
    to_state   TEXT    NOT NULL,
    by_id      TEXT    NOT NULL DEFAULT '',
    via        TEXT    NOT NULL DEFAULT '',
    reason     TEXT    NOT NULL DEFAULT '',
    at         INTEGER NOT NULL
);
CREATE INDEX audit_by_question ON audit (question, id);

-- Answer attempts already decided: the same interaction twice is one attempt.
CREATE TABLE attempts (
    attempt_id TEXT    PRIMARY KEY,
    question   INTEGER NOT NULL DEFAULT 0,
    at         INTEGER NOT NULL
) WITHOUT ROWID;

-- Messages to publish, written in the same transaction as the change they announce.
CREATE TABLE outbox (
    id         INTEGER PRIMARY KEY,
    subject    TEXT    NOT NULL,
    data       BLOB    NOT NULL,
    created_at INTEGER NOT NULL,
    sent_at    INTEGER
);
CREATE INDEX outbox_unsent ON outbox (id) WHERE sent_at IS NULL;

-- Where each platform showed a question, or why it could not.
CREATE TABLE deliveries (
    question   INTEGER NOT NULL REFERENCES questions (id),
    platform   TEXT    NOT NULL,
    ok         INTEGER NOT NULL,
    channel    TEXT    NOT NULL DEFAULT '',
    message_id TEXT    NOT NULL DEFAULT '',
    thread     TEXT    NOT NULL DEFAULT '',
    failure    TEXT    NOT NULL DEFAULT '',
    at         INTEGER NOT NULL,
    PRIMARY KEY (question, platform)
) WITHOUT ROWID;

-- Written by readiness checks to prove the store takes writes.
CREATE TABLE heartbeat (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    at INTEGER NOT NULL
);
