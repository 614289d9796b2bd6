-- A random id of this database, so outbox message ids ("ob-<instance>-<row>")
-- never collide with an earlier database's within JetStream's duplicate window
-- (a wiped data directory against an external NATS, or another replica's store).
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;
INSERT INTO meta (key, value) VALUES ('instance', lower(hex(randomblob(8))));
