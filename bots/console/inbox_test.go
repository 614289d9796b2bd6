package console

import (
	"bufio"
	"context"
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/runtime"
)

func TestFilterOfDropsWhatNoQuestionMatches(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		query string
		want  inboxFilter
	}{
		{"", inboxFilter{}},
		{"kind=approval&tenant=acme&job=job-3&priority=high", inboxFilter{Kind: "approval", Tenant: "acme", Job: "job-3", Priority: "high"}},
		{"kind=bogus&tenant=a%20b&job=" + strings.Repeat("j", 65) + "&priority=urgent", inboxFilter{}},
	} {
		q, _ := url.ParseQuery(c.query)
		if got := filterOf(q); got != c.want {
			t.Errorf("filterOf(%q) = %+v, want %+v", c.query, got, c.want)
		}
	}
}

func TestSentenceGivesEveryProblemItsSubject(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ subject, name, msg, want string }{
		{"Send on", "on", "is required", "Send on is required."},
		{"Send on", "on", "on: is required", "Send on is required."},
		{"Copies", "copies", "must be at most 9", "Copies must be at most 9."},
		{"Your answer", "answer", "answer: must be one of: blue, green", "Your answer must be one of: blue, green."},
		{"The reason", "comment", "Say why you deny it: the agent reads it.", "Say why you deny it: the agent reads it."},
		{"colour", "colour", "not a field of this question", "colour: not a field of this question."},
		{"Copies", "copies", "", ""},
	} {
		if got := sentence(c.subject, c.name, c.msg); got != c.want {
			t.Errorf("sentence(%q, %q, %q) = %q, want %q", c.subject, c.name, c.msg, got, c.want)
		}
	}
}

func TestTextPartsShowNoRawMoment(t *testing.T) {
	t.Parallel()
	parts := textParts("This question was already answered by console:bob at 2026-12-06T03:28:07Z.")
	if len(parts) != 3 || parts[0].Text != "This question was already answered by console:bob at " || parts[2].Text != "." ||
		parts[1].Time.ISO != "2026-12-06T03:28:07Z" || parts[1].Time.Text != "6 Dec 2026, 03:28 UTC" {
		t.Errorf("parts %+v", parts)
	}
	if parts := textParts("no moment"); len(parts) != 1 || parts[0].Text != "no moment" {
		t.Errorf("parts %+v", parts)
	}
}

// TestListLinkBackIsSigned checks the inbox's way back is part of the
// signature: a question link from chat cannot be given one by hand.
func TestListLinkBackIsSigned(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	q := reportQuestion("job-1")
	h.rt.add(q)
	link := h.questionURL("console:alice", q)
	if p := h.get(link); p.status != http.StatusOK || strings.Contains(p.body, `class="back"`) {
		t.Fatalf("a chat link's page: status %d, or it links to the inbox:\n%s", p.status, p.body)
	}
	if p := h.get(link + "&from=list"); p.status != http.StatusForbidden {
		t.Errorf("from=list added by hand: status %d, want 403", p.status)
	}
	list := h.get(h.signer.ListURL("console:alice", time.Hour))
	i := strings.Index(list.body, `class="item-title" href="`)
	if i < 0 {
		t.Fatalf("no question in the inbox:\n%s", list.body)
	}
	href := html.UnescapeString(strings.SplitN(list.body[i+len(`class="item-title" href="`):], `"`, 2)[0])
	if p := h.get(h.abs(href)); p.status != http.StatusOK || !strings.Contains(p.body, `<nav class="back" aria-label="Back"><a href="`) {
		t.Errorf("the inbox's question page: status %d, or no way back:\n%s", p.status, p.body)
	}
}

// TestInboxFiltersAndCounts checks the filter narrows the list, the
// counts are by kind under the rest of the filter, and an empty result
// offers the whole inbox again; and that someone with no role is told why
// nothing shows.
func TestInboxFiltersAndCounts(t *testing.T) {
	t.Parallel()
	h, env := newEnvHarness(t, testenv.Options{Roles: runtime.Roles{Operators: []string{"console:olivia"}}})
	for _, q := range inboxQuestions() {
		ask(t, h, env, q)
	}
	list := h.signer.ListURL("console:olivia", time.Hour)
	for _, c := range []struct {
		query      string
		want, lack []string
	}{
		{"", []string{"Which colour", "May I refund", "dashboard", `All <span class="count">3</span>`, `Approvals <span class="count">1</span>`}, nil},
		{"&tenant=globex", []string{"dashboard", `All <span class="count">1</span>`, `Approvals <span class="count">0</span>`, `<option value="globex" selected>`},
			[]string{"Which colour", "May I refund"}},
		{"&kind=approval", []string{"May I refund", `All <span class="count">3</span>`, `aria-current="page">Approvals`}, []string{"Which colour", "dashboard"}},
		{"&priority=high&tenant=acme", []string{"Which colour", `<span class="badge prio prio-high">high priority</span>`}, []string{"May I refund", "dashboard"}},
		{"&job=job-9", []string{"Nothing that waits for you matches this filter.", "(3 waiting)"}, []string{"Which colour"}},
	} {
		p := h.get(list + c.query)
		for _, w := range c.want {
			if !strings.Contains(p.body, w) {
				t.Errorf("%q: page lacks %q", c.query, w)
			}
		}
		for _, l := range c.lack {
			if strings.Contains(p.body, l) {
				t.Errorf("%q: page shows %q", c.query, l)
			}
		}
	}
	p := h.get(h.signer.ListURL("console:nobody", time.Hour))
	if !strings.Contains(p.body, "you have no role in any tenant") || !strings.Contains(p.body, "<code>console:nobody</code> to <code>ASK_OPERATORS</code>") ||
		strings.Contains(p.body, `id="filter"`) {
		t.Errorf("no role:\n%s", p.body)
	}
}

// TestEventStreamSaysWhatTheViewerSees reads the inbox's event stream:
// an operator hears of every question; someone with no role only of the
// question that names them.
func TestEventStreamSaysWhatTheViewerSees(t *testing.T) {
	t.Parallel()
	h, env := newEnvHarness(t, testenv.Options{Roles: runtime.Roles{Operators: []string{"console:olivia"}}})
	olivia, nobody := h.stream("console:olivia"), h.stream("console:nobody")
	first := bridge.Question{Tenant: "acme", JobID: "job-s", QuestionID: "q-1", Question: "First?", Answerers: []string{"console:olivia"}}
	second := bridge.Question{Tenant: "globex", JobID: "job-s", QuestionID: "q-2", Question: "Second?", Answerers: []string{"console:nobody"}}
	ask(t, h, env, first)
	ask(t, h, env, second)
	// HEAD says what GET would send, and ends.
	head, _ := http.NewRequest(http.MethodHead, h.abs(strings.Replace(h.signer.ListURL("console:olivia", time.Hour), "/console/?", "/console/events/?", 1)), nil)
	if p := h.do(head); p.status != http.StatusOK || !strings.HasPrefix(p.header.Get("Content-Type"), "text/event-stream") {
		t.Errorf("HEAD of a stream: status %d, %q", p.status, p.header.Get("Content-Type"))
	}
	// A question's stream is for who may know of the question.
	qs := h.signer.URL(Link{Identity: "console:nobody", Scope: ScopeQuestion, Tenant: "acme", JobID: "job-s", QuestionID: "q-1", Expires: time.Now().Add(time.Hour)})
	if p := h.get(strings.Replace(qs, "/console/q/", "/console/events/q/", 1)); p.status != http.StatusNotFound {
		t.Errorf("a stranger's stream of another's question: status %d", p.status)
	}
	for _, c := range []struct {
		lines <-chan string
		want  string
	}{{olivia, "acme/job-s/q-1"}, {nobody, "globex/job-s/q-2"}} {
		select {
		case got := <-c.lines:
			if got != c.want {
				t.Errorf("first change %q, want %q", got, c.want)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("no change for %s", c.want)
		}
	}
}

// stream opens identity's inbox event stream and sends the data of each
// changed event.
func (h *harness) stream(identity string) <-chan string {
	h.t.Helper()
	u := h.signer.URL(Link{Identity: identity, Scope: ScopeList, Expires: time.Now().Add(time.Hour)})
	u = strings.Replace(u, "/console/?", "/console/events/?", 1)
	ctx, cancel := context.WithCancel(context.Background())
	h.t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		h.t.Fatalf("events: status %d, %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	out := make(chan string, 16)
	go func() {
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		changed := false
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "event: changed":
				changed = true
			case changed && strings.HasPrefix(line, "data: "):
				out <- strings.TrimPrefix(line, "data: ")
				changed = false
			}
		}
	}()
	return out
}
