// Package record is the seam between askbridge's runtime and its durable
// record: the types a question, a decision, a proposal and the outbox are
// written and read as, and Backend, the one interface a store implements.
// The SQLite store (package store) and the JetStream store (store/jsstore)
// implement it; store/storetest holds the conformance suite both pass.
// docs/design.md, "Packages" and "The JetStream store", says how they fit.
package record
