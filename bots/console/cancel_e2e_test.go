package console

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
)

// The console's question page says why a retired or implicitly answered
// question ended, in the card's words.
func TestE2ERetiredAndImplicitlyAnsweredPages(t *testing.T) {
	t.Parallel()
	h, env := newEnvHarness(t, testenv.Options{})
	for _, c := range []struct {
		cancel bridge.Cancel
		want   string
	}{
		{bridge.Cancel{Status: bridge.CancelRetired, Reason: "the customer switched plans"},
			`<p class="outcome-line">No longer needed: the customer switched plans</p>`},
		{bridge.Cancel{Status: bridge.CancelImplicitlyAnswered, Evidence: "green, as the brand guide says"},
			`<p class="outcome-line">Answered in conversation: “green, as the brand guide says”</p>`},
	} {
		q := bridge.Question{Tenant: "acme", JobID: "job-" + c.cancel.Status, QuestionID: "q-colour", TaskVersion: 1,
			Question: "Which colour should the cover be?", Choices: []string{"blue", "green"}, Answerers: []string{"console:alice"}}
		ask(t, h, env, q)
		c.cancel.Tenant, c.cancel.JobID, c.cancel.QuestionID = q.Tenant, q.JobID, q.QuestionID
		if err := bridge.Publish(context.Background(), env.NATS.JS, bridge.CancelSubject(q.Tenant, q.JobID), "cancel-"+q.JobID, c.cancel); err != nil {
			t.Fatal(err)
		}
		link := h.questionURL("console:alice", q)
		testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
			if body := h.get(link).body; !strings.Contains(body, c.want) {
				return fmt.Errorf("%s: the page lacks %s", c.cancel.Status, c.want)
			}
			return nil
		})
	}
}
