package discord

import (
	"strings"
	"testing"
)

func TestCustomIDRoundTrip(t *testing.T) {
	t.Parallel()
	for _, act := range []string{actChoice, actSelect, actAnswer, actDecline, actApprove, actDeny, actConsole, actModalAnswer, actModalReason, actModalDeny} {
		id := customID(act, "acme", "job-1", "q_1", 42, 7)
		a, err := parseCustomID(id)
		if err != nil {
			t.Fatalf("%s: %q: %v", act, id, err)
		}
		if a.Act != act || a.Tenant != "acme" || a.JobID != "job-1" || a.QuestionID != "q_1" || a.TaskVersion != 42 {
			t.Fatalf("%s: parsed %+v", act, a)
		}
		if act == actChoice && a.Index != 7 {
			t.Fatalf("index = %d", a.Index)
		}
	}
	long := strings.Repeat("x", 64)
	id := customID(actChoice, long, long, long, 1<<40, 24)
	if len(id) > 100 {
		t.Fatalf("%d characters", len(id))
	}
	a, err := parseCustomID(id)
	if err != nil || a.Key != cardHash(long, long, long) || a.Index != 24 || a.TaskVersion != 1<<40 {
		t.Fatalf("keyed: %+v, %v", a, err)
	}
}

func TestCustomIDParsedStrictly(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		"", "ab", "ab:c", "ab:zz:acme:job:q:1", // unknown action
		"ab:c:acme:job:q:1",                    // choice without index
		"ab:a:acme:job:q:1:0",                  // index on an action without one
		"ab:mn:acme:job:q:1:0",                 // index on the deny form
		"ab:mx:acme:job:q:1",                   // unknown form
		"ab:c:acme:job:q:1:25",                 // index beyond 24
		"ab:c:acme:job:q:1:-1",                 // sign
		"ab:a:acme:job:q:+1",                   // sign
		"ab:a:acme:job:q:01",                   // leading zero
		"ab:a:acme:job:q:1e3",                  // not decimal
		"ab:a:acme:job:q:9223372036854775808",  // beyond int64
		"ab:a:acme:job:q:99999999999999999999", // 20 digits
		"ab:a:ac me:job:q:1",                   // bad token
		"ab:a:acme:job.x:q:1",                  // bad token
		"ab:a::job:q:1",                        // empty token
		"ab#:a:short:1",                        // bad key
		"ab#:a:AAAAAAAAAAAAAAAAAAAA:1",         // key out of alphabet
		"xx:a:acme:job:q:1",                    // prefix
		"ab:a:acme:job:q:1:",                   // trailing part
		strings.Repeat("a", 101),
	} {
		if a, err := parseCustomID(s); err == nil {
			t.Errorf("%q parsed as %+v", s, a)
		}
	}
}

// TestKeyedIDsNeverMissesAKeyedID checks keyedIDs says yes whenever any
// action's custom id for the question takes the keyed form, across id
// lengths around Discord's 100-character limit.
func TestKeyedIDsNeverMissesAKeyedID(t *testing.T) {
	t.Parallel()
	acts := []string{actChoice, actSelect, actAnswer, actDecline, actApprove, actDeny, actConsole, actModalAnswer, actModalReason, actModalDeny}
	for _, version := range []int64{1, 12345} {
		for n := 20; n <= 64; n++ {
			tenant, job, question := strings.Repeat("t", n/2+1), strings.Repeat("j", n), strings.Repeat("q", n/3+1)
			keyed := false
			for _, act := range acts {
				for index := range maxChoices {
					if strings.HasPrefix(customID(act, tenant, job, question, version, index), keyedPrefix+":") {
						keyed = true
					}
				}
			}
			if keyed && !keyedIDs(tenant, job, question, version) {
				t.Errorf("ids of %d/%d/%d characters at version %d: some custom id is keyed, keyedIDs says no", len(tenant), len(job), len(question), version)
			}
		}
	}
	if keyedIDs("acme", "job-1", "q-1", 3) {
		t.Error("keyedIDs says yes for short ids")
	}
}
