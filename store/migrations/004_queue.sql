-- The queue (docs/design.md, "The queue and nudges"): how many ladder
-- rounds passed without an answer, bumped when one of the question's
-- reminder or escalation steps fires.
ALTER TABLE questions ADD COLUMN staleness INTEGER NOT NULL DEFAULT 0;
