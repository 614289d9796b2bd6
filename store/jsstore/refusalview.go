package jsstore

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// A replica keeps its view of the gate's refusals, log.<day>.r.> (keyLog),
// for GateDecisions: a stats request over the whole month the refusals are
// kept would otherwise read each day's keys from the server, a request a
// day. A refusal is written once and never changed; the bucket removes it
// when its key TTL (gateLogTTL) ends, and says nothing of that to a watch,
// so the view lets go of it at the same time on its own.

// refusal is one gate refusal as the view holds it.
type refusal struct {
	tenant, job, code string
	// at is when the gate decided, Unix milliseconds.
	at int64
	// gone is when it stops counting: when the bucket removes its key
	// (its write plus its TTL), or its time plus the gate's retention
	// when that is earlier.
	gone time.Time
}

// refusalView is a replica's view of the gate's refusals.
type refusalView struct {
	keyView
	byKey map[string]refusal
	// now is the clock the view lets refusals go by.
	now func() time.Time
}

// init makes rv a view of the gate's refusals; warn reports a malformed
// key or value.
func (rv *refusalView) init(warn func(string, ...any)) {
	rv.filter, rv.mark, rv.what = "log.*."+logClassRefusal+".>", keyRefusalMark, "the gate's refusals"
	rv.now = time.Now
	rv.reset = func() { rv.byKey = map[string]refusal{} }
	rv.apply = func(e jetstream.KeyValueEntry, initial bool) {
		if e.Operation() != jetstream.KeyValuePut {
			if !initial {
				delete(rv.byKey, e.Key())
			}
			return
		}
		tok := strings.Split(e.Key(), ".")
		if len(tok) != 6 {
			warn("jsstore: a malformed refusal key is ignored", "key", e.Key())
			return
		}
		var d logDoc
		var c gateCode
		if err := json.Unmarshal(e.Value(), &d); err != nil || d.At == 0 || json.Unmarshal(d.Body, &c) != nil || c.Code == nil {
			warn("jsstore: a refusal without its time or code is ignored", "key", e.Key())
			return
		}
		// A refusal goes when its key does, or when the gate's retention
		// from its own time is over, as SQLite prunes it: a refusal
		// migrated from an older record keeps its time.
		written := e.Created()
		if at := time.UnixMilli(d.At); at.Before(written) {
			written = at
		}
		rv.byKey[e.Key()] = refusal{tenant: intern(dec(tok[3])), job: dec(tok[4]), code: intern(*c.Code),
			at: d.At, gone: written.Add(gateLogTTL)}
	}
}

// each runs f on every refusal the bucket still holds, of tenant when
// given, and lets go of those it removed. It runs under the view's lock.
func (rv *refusalView) each(tenant string, f func(refusal)) {
	now := rv.now()
	for key, r := range rv.byKey {
		switch {
		case !now.Before(r.gone):
			delete(rv.byKey, key)
		case tenant == "" || r.tenant == tenant:
			f(r)
		}
	}
}
