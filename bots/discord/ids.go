package discord

import (
	"crypto/sha256"
	"encoding/base32"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/askbridge/askbridge/bridge"
)

// Actions a custom_id names. A custom_id only says which card and button
// was used: it is never trusted for authorization (the runtime decides).
const (
	actChoice      = "c"  // a choice button; arg is the choice index
	actSelect      = "s"  // the choice select; the index is the selected value
	actAnswer      = "a"  // opens the free-text answer modal
	actDecline     = "d"  // opens the decline modal
	actApprove     = "ok" // approves an approval
	actDeny        = "no" // opens the deny modal (asks why)
	actConsole     = "cl" // replies with a console link signed for the clicker
	actConsoleJob  = "cj" // replies with a link to the question's job, signed for the clicker
	actModalAnswer = "ma" // the answer modal's submit
	actModalReason = "md" // the decline modal's submit
	actModalDeny   = "mn" // the deny modal's submit: denies an approval
	actDelegate    = "dg" // Ask someone else: replies with a user select
	actPick        = "pk" // the user select: asks the picked person to answer
	actSnooze      = "sn" // Remind me later: replies with its lengths
	actSnoozeFor   = "sf" // one length of Remind me later; arg is its index
)

// Prefixes: the direct form carries the ids; the keyed form (for ids too
// long for Discord's 100 characters) carries a hash the card index resolves.
const (
	idPrefix    = "ab"
	keyedPrefix = "ab#"
	maxCustomID = 100
	maxChoices  = 25
	keyLen      = 20
)

// action is a parsed custom_id.
type action struct {
	Act         string
	Tenant      string
	JobID       string
	QuestionID  string
	TaskVersion int64
	// Key is set for the keyed form; Tenant/JobID/QuestionID are then
	// filled from the card index.
	Key string
	// Index is the choice index of actChoice.
	Index int
}

// takesIndex reports whether an action carries a choice index.
func takesIndex(act string) bool { return act == actChoice || act == actSnoozeFor }

func knownAction(act string) bool {
	switch act {
	case actChoice, actSelect, actAnswer, actDecline, actApprove, actDeny, actConsole, actConsoleJob, actModalAnswer, actModalReason, actModalDeny,
		actDelegate, actPick, actSnooze, actSnoozeFor:
		return true
	}
	return false
}

// cardKey is the short hash naming a question in keyed custom ids.
func cardHash(tenant, job, question string) string {
	sum := sha256.Sum256([]byte(tenant + "\n" + job + "\n" + question))
	return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:]))[:keyLen]
}

// customID encodes an action for a card. It uses the keyed form when the
// direct one would exceed Discord's limit.
func customID(act, tenant, job, question string, version int64, index int) string {
	tail := strconv.FormatInt(version, 10)
	if takesIndex(act) {
		tail += ":" + strconv.Itoa(index)
	}
	direct := strings.Join([]string{idPrefix, act, tenant, job, question, tail}, ":")
	if len(direct) <= maxCustomID {
		return direct
	}
	return strings.Join([]string{keyedPrefix, act, cardHash(tenant, job, question), tail}, ":")
}

// keyedIDs says some custom id of the question's card or of its forms may
// take the keyed form, so the card index must exist. It measures the
// longest direct form any action can have (a two-letter action and the
// highest choice index), so it never says no when one is keyed.
func keyedIDs(tenant, job, question string, version int64) bool {
	longest := strings.Join([]string{idPrefix, "xx", tenant, job, question,
		strconv.FormatInt(version, 10), strconv.Itoa(maxChoices - 1)}, ":")
	return len(longest) > maxCustomID
}

var errBadCustomID = errors.New("discord: this component is not one askbridge made")

// parseCustomID parses a custom_id strictly: a known prefix and action,
// the exact number of parts, valid tokens and a canonical version.
func parseCustomID(s string) (action, error) {
	var a action
	if len(s) == 0 || len(s) > maxCustomID {
		return a, errBadCustomID
	}
	parts := strings.Split(s, ":")
	if len(parts) < 2 || !knownAction(parts[1]) {
		return a, errBadCustomID
	}
	a.Act = parts[1]
	want := 0
	switch parts[0] {
	case idPrefix:
		want = 6
	case keyedPrefix:
		want = 4
	default:
		return a, errBadCustomID
	}
	if takesIndex(a.Act) {
		want++
	}
	if len(parts) != want {
		return a, errBadCustomID
	}
	rest := parts[2:]
	if parts[0] == idPrefix {
		a.Tenant, a.JobID, a.QuestionID = rest[0], rest[1], rest[2]
		if !bridge.ValidToken(a.Tenant) || !bridge.ValidToken(a.JobID) || !bridge.ValidToken(a.QuestionID) {
			return a, errBadCustomID
		}
		rest = rest[3:]
	} else {
		a.Key = rest[0]
		if !validKey(a.Key) {
			return a, errBadCustomID
		}
		rest = rest[1:]
	}
	// Any version the runtime takes: a whole int64 (a clock in nanoseconds
	// makes 19 digits).
	v, err := canonicalInt(rest[0], math.MaxInt64)
	if err != nil {
		return a, errBadCustomID
	}
	a.TaskVersion = v
	if takesIndex(a.Act) {
		i, err := canonicalInt(rest[1], maxChoices-1)
		if err != nil {
			return a, errBadCustomID
		}
		a.Index = int(i)
	}
	return a, nil
}

func validKey(k string) bool {
	if len(k) != keyLen {
		return false
	}
	for _, r := range k {
		if !(r >= 'a' && r <= 'z' || r >= '2' && r <= '7') {
			return false
		}
	}
	return true
}

// canonicalInt parses a non-negative decimal without sign or leading zeros.
func canonicalInt(s string, max int64) (int64, error) {
	if s == "" || len(s) > 19 || (len(s) > 1 && s[0] == '0') {
		return 0, fmt.Errorf("not a canonical number: %q", s)
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return 0, fmt.Errorf("not a canonical number: %q", s)
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n > max {
		return 0, fmt.Errorf("number out of range: %q", s)
	}
	return n, nil
}

// discordEpoch is the first millisecond of 2015, from which Discord's
// snowflake ids count their time.
const discordEpoch = 1420070400000

// snowflakeTime is when Discord made a snowflake id (the id's top 42 bits
// are milliseconds since discordEpoch).
func snowflakeTime(id string) (time.Time, bool) {
	n, err := strconv.ParseUint(id, 10, 64)
	if err != nil || !bridge.ValidSnowflake(id) {
		return time.Time{}, false
	}
	return time.UnixMilli(int64(n>>22) + discordEpoch), true
}

// snowflakeAt is the smallest snowflake id Discord could make at t.
func snowflakeAt(t time.Time) string {
	ms := t.UnixMilli() - discordEpoch
	if ms < 0 {
		ms = 0
	}
	return strconv.FormatUint(uint64(ms)<<22, 10)
}
