-- The clarification measures (docs/design.md) read the questions asked in a
-- window and the gate's refusals in it: without these, each stats request
-- and each /metrics scrape would read every row. The gate writes a row for
-- every request, most of them allowed: only its refusals are indexed, so
-- the index costs the allowed ones nothing and a scrape reads no allowed
-- decision.
CREATE INDEX questions_by_asked ON questions (asked_at);
CREATE INDEX job_log_gate_refusals ON job_log (at)
    WHERE kind = 'gate' AND json_extract(body, '$.code') <> 'allowed';
