package runtime

import (
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bridge"
)

// parseAttempt reads an attempt; nil means it is unusable and dropped.
func (r *Runtime) parseAttempt(msg jetstream.Msg) *attemptItem {
	tenant, job, ok := subjectKey(msg.Subject(), bridge.PrefixAnswer)
	if !ok {
		r.log.Warn("answer attempt on a subject without a valid tenant and job; dropped", "subject", msg.Subject())
		return nil
	}
	it := &attemptItem{tenant: tenant, job: job, msg: msg}
	if to := msg.Headers().Get(bridge.HeaderDecidedTo); bridge.ValidNotifySubject(to) {
		it.notify = []string{to}
	}
	a := &it.a
	var unreadable string
	if err := bridge.DecodeAttempt(msg.Data(), a); err != nil {
		if !bridge.IsPartial(err) {
			r.log.Warn("malformed answer attempt dropped", "subject", msg.Subject(), "err", err)
			return nil
		}
		// One value of the wrong type: refused, naming it, so whoever
		// proposed it hears why instead of waiting for nothing.
		unreadable = err.Error()
	}
	if a.Tenant == "" {
		a.Tenant = tenant
	}
	if a.JobID == "" {
		a.JobID = job
	}
	if meta, err := msg.Metadata(); err == nil {
		it.seq, it.delivered = meta.Sequence.Stream, meta.NumDelivered
		if a.AttemptID == "" {
			// Named by the stored message's sequence and time: a stream
			// made anew numbers from 1 again, and an id of the sequence
			// alone would be ignored as an earlier attempt's.
			a.AttemptID = fmt.Sprintf("seq-%d-%d", meta.Sequence.Stream, meta.Timestamp.UnixNano())
		}
	}
	it.key = AttemptKey(tenant, job, a.AttemptID)
	switch {
	case a.Tenant != tenant || a.JobID != job:
		// The subject says whose job this is (NATS permissions are per
		// subject): the refusal goes there, never to the body's job.
		it.ref = &refusal{reason: bridge.RefusedUnknown, text: fmt.Sprintf(
			"tenant and job_id: %q/%q do not match the subject's %s/%s.", a.Tenant, a.JobID, tenant, job)}
		a.Tenant, a.JobID = tenant, job
	case unreadable != "":
		it.ref = &refusal{reason: bridge.RefusedInvalid, text: "The answer could not be read: " + unreadable + "."}
	}
	if err := bridge.CheckIdentity(a.By); err != nil {
		// Nobody can be allowed to answer as no one: refuse it, loudly.
		it.ref = &refusal{reason: bridge.RefusedForbidden, text: "You can't answer this question: by: " + err.Error()}
	}
	return it
}

// AttemptKey is the store's record of an attempt, as its job's: attempt
// ids are the front-end's, unique per interaction, and one reused in
// another job (a hand-written "a-1") is another attempt, not a double
// click. Tenants and job ids hold no "/".
func AttemptKey(tenant, job, id string) string {
	return tenant + "/" + job + "/" + id
}

// parseAttempts reads a batch's attempts, one item for each attempt id (a
// second message of the same attempt only adds whom to tell, and goes
// where the first goes).
func (r *Runtime) parseAttempts(msgs []jetstream.Msg) []*attemptItem {
	var items []*attemptItem
	byID := map[string]*attemptItem{}
	for _, m := range msgs {
		it := r.parseAttempt(m)
		if it == nil {
			continue
		}
		if first := byID[it.key]; first != nil {
			first.notify = append(first.notify, it.notify...)
			first.also = append(first.also, m)
			continue
		}
		byID[it.key] = it
		items = append(items, it)
	}
	return items
}

// streamSeqs are the stream sequences of msgs but those waiting.
func streamSeqs(msgs []jetstream.Msg, waiting map[*attemptItem]bool) []uint64 {
	skip := map[jetstream.Msg]bool{}
	for it := range waiting {
		for _, m := range it.msgs() {
			skip[m] = true
		}
	}
	seqs := make([]uint64, 0, len(msgs))
	for _, m := range msgs {
		if meta, err := m.Metadata(); err == nil && !skip[m] {
			seqs = append(seqs, meta.Sequence.Stream)
		}
	}
	return seqs
}
