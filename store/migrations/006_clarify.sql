-- The clarification measures (docs/design.md) read the questions asked in a
-- window and the gate's decisions in it: without these, each stats request
-- and each /metrics scrape would read every row.
CREATE INDEX questions_by_asked ON questions (asked_at);
CREATE INDEX job_log_by_kind ON job_log (kind, at);
