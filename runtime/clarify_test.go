package runtime_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
)

// A stats request with a window it cannot read is told why; an empty
// body, as clients sent before, gets the last 7 days.
func TestStatsRequestWindow(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{})
	for _, c := range []struct{ body, wantErr string }{
		{`{"since": "banana"}`, `since: "banana" is not a positive duration such as 7d, 24h or 90m (at most 90d)`},
		{`{"since": "7d", "tenant": "no such/tenant"}`, `tenant: "no such/tenant" must be 1 to 64 letters, digits, '-' or '_'`},
		{`{}`, ""},
		{`not json`, ""},
	} {
		msg, err := env.NATS.Conn.Request(bridge.APIStats, []byte(c.body), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var reply bridge.StatsReply
		if err := json.Unmarshal(msg.Data, &reply); err != nil {
			t.Fatal(err)
		}
		if reply.Error != c.wantErr {
			t.Errorf("%s: error %q, want %q", c.body, reply.Error, c.wantErr)
		}
		if c.wantErr == "" && (reply.Clarification == nil || reply.Clarification.Until.Sub(reply.Clarification.Since) != 7*24*time.Hour ||
			reply.Clarification.Groups == nil || reply.Clarification.Total.GateRefusals == nil) {
			t.Errorf("%s: clarification %+v, want the last 7 days, empty", c.body, reply.Clarification)
		}
	}
}
