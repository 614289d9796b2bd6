package jsstore

import (
	"encoding/base64"
	"regexp"
	"strconv"
	"strings"
)

// The record's keys (docs/design.md, "The JetStream store"). Every query the
// product makes is a key pattern the server answers from its subject index:
// a job's questions, a tenant's questions in a state, a job's due steps.
const (
	keyMetaInstance = "meta.instance"
	// keyRelayLease names the replica whose relay publishes the outbox.
	keyRelayLease = "lease.relay"
)

// safeToken is a key token that needs no encoding.
var safeToken = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// enc makes s one key token: contract tokens ([A-Za-z0-9_-]) stay as they
// are; anything else becomes "=" and its base64url, which no plain token
// starts with.
func enc(s string) string {
	if safeToken.MatchString(s) {
		return s
	}
	return "=" + base64.RawURLEncoding.EncodeToString([]byte(s))
}

// dec is enc's inverse.
func dec(tok string) string {
	if len(tok) == 0 || tok[0] != '=' {
		return tok
	}
	b, err := base64.RawURLEncoding.DecodeString(tok[1:])
	if err != nil {
		return tok
	}
	return string(b)
}

func id(n int64) string { return strconv.FormatInt(n, 10) }

// keyQuestion is a question's document.
func keyQuestion(q int64) string { return "q." + id(q) }

// keyQuestionVersion maps a question id at a task version to its record id.
func keyQuestionVersion(tenant, job, qid string, version int64) string {
	return "qk." + enc(tenant) + "." + enc(job) + "." + enc(qid) + "." + id(version)
}

// keyState indexes a question by tenant and state.
func keyState(tenant, state, job string, q int64) string {
	return stateIndexPrefix + enc(tenant) + "." + enc(state) + "." + enc(job) + "." + id(q)
}

// stateIndexPrefix begins every key of the state index.
const stateIndexPrefix = "qs."

// keyStateMark is written, empty, last in every batch that writes the
// state index. It is under qs.> but no question's key: the last revision
// of one literal key is a cheap read, where that of any key under qs.>
// costs the server a walk of them all, and a replica's view of the index
// is current once it has seen the mark's last write (stateview.go).
const keyStateMark = stateIndexPrefix + "mark"

// keyRefusalMark is written, empty, last in every batch that writes a gate
// refusal: under log.*.r.> as the refusals are, and no refusal's key (a
// day is eight digits), for the replica's view of them (refusalview.go)
// as keyStateMark is for the state index's.
const keyRefusalMark = "log.0." + logClassRefusal + ".mark"

// markOf is the mark a batch writing key writes last, "" when none.
func markOf(key string) string {
	if strings.HasPrefix(key, stateIndexPrefix) {
		return keyStateMark
	}
	if rest, ok := strings.CutPrefix(key, "log."); ok {
		if _, rest, ok = strings.Cut(rest, "."); ok && strings.HasPrefix(rest, logClassRefusal+".") {
			return keyRefusalMark
		}
	}
	return ""
}

// keyJob is a job's document.
func keyJob(tenant, job string) string { return "job." + enc(tenant) + "." + enc(job) }

// keyDue is a question's next ladder step or timeout.
func keyDue(tenant, job string, q int64) string {
	return "due." + enc(tenant) + "." + enc(job) + "." + id(q)
}

// keyAttempt marks an attempt decided.
func keyAttempt(attempt string) string { return "att." + enc(attempt) }

// keyOutbox is an outbox row not yet published.
func keyOutbox(unique string) string { return "out." + unique }

// keyProposal is a proposal's document.
func keyProposal(tenant, proposal string) string { return "prop." + enc(tenant) + "." + enc(proposal) }

// keyLog is one entry of a job's log, written on day (UTC, 20061231) and
// of class (joblog_write.go). The day and class come first so that the
// gate's refusals are one pattern (log.*.r.>, the replica's view of them,
// refusalview.go), not a scan of the gate's decisions of every job; a
// job's log is log.*.*.<tenant>.<job>.*, which the server's subject index
// answers by walking the days and classes, not the entries.
func keyLog(day, class, tenant, job, unique string) string {
	return "log." + day + "." + class + "." + enc(tenant) + "." + enc(job) + "." + unique
}

// keyNotice marks a notice recorded, by its id.
func keyNotice(tenant, job, notice string) string {
	return "notice." + enc(tenant) + "." + enc(job) + "." + enc(notice)
}

// keyMeta is a named setting of the record.
func keyMeta(name string) string { return "meta." + enc(name) }

// keySeq is a counter handing out ids.
func keySeq(name string) string { return "seq." + enc(name) }
