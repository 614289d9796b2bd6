-- Snoozes: one person's "Remind me later" on one question
-- (docs/contract.md "Delegate and snooze"). Until then the ladder's
-- reminders skip identity; step is the ladder step (target 'snooze') that
-- reminds them once when it ends.
CREATE TABLE snoozes (
    question INTEGER NOT NULL REFERENCES questions (id),
    identity TEXT    NOT NULL,
    until    INTEGER NOT NULL,
    step     INTEGER NOT NULL,
    PRIMARY KEY (question, identity)
) WITHOUT ROWID;
