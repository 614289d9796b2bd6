package console

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
)

const testSecret = "0123456789abcdef-console-test-secret"

type harness struct {
	t      *testing.T
	n      *bridge.NATS
	rt     *responder
	srv    *httptest.Server
	signer Signer
	logs   *testenv.LockedBuffer
	client *http.Client
	// attempts counts what is published on the answer subjects.
	attempts *testenv.Publications
	// prefix, when set, serves the console behind a proxy under that path.
	prefix string
	// now, when set, is the console's clock.
	now func() time.Time
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	n := startNATS(t)
	h := &harness{t: t, n: n, logs: &testenv.LockedBuffer{}}
	h.rt = startResponder(t, n)
	h.start(n)
	return h
}

// start serves a console on n at a loopback HTTP server.
func (h *harness) start(n *bridge.NATS) {
	t := h.t
	h.attempts = testenv.Published(t, n.Conn, bridge.PrefixAnswer+".>")
	mux := http.NewServeMux()
	var front http.Handler = mux
	if h.prefix != "" {
		// A proxy that serves askbridge under a path, as ASK_PUBLIC_URL says.
		outer := http.NewServeMux()
		outer.Handle(h.prefix+"/", http.StripPrefix(h.prefix, mux))
		front = outer
	}
	h.srv = httptest.NewServer(front)
	t.Cleanup(h.srv.Close)
	h.signer = Signer{PublicURL: h.srv.URL + h.prefix, Secret: []byte(testSecret)}
	c, err := New(Options{NATS: n, Signer: h.signer, Now: h.now, Logger: slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatalf("console.New: %v", err)
	}
	c.Routes(mux)
	t.Cleanup(c.Close) // before the server closes: it waits for open streams
	t.Cleanup(func() {
		logs := h.logs.String()
		if strings.Contains(logs, testSecret) || strings.Contains(logs, "sig=") || strings.Contains(logs, "csrf") {
			t.Errorf("the logs hold a secret, a link signature or a form token:\n%s", logs)
		}
	})
	h.client = &http.Client{
		Timeout:       15 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

type page struct {
	status int
	body   string
	header http.Header
}

func (h *harness) do(req *http.Request) page {
	h.t.Helper()
	resp, err := h.client.Do(req)
	if err != nil {
		h.t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatalf("read body: %v", err)
	}
	body := string(b)
	if strings.Contains(body, testSecret) {
		h.t.Fatalf("%s %s: the console secret is in the page", req.Method, req.URL.Path)
	}
	if strings.Contains(body, "goroutine ") || strings.Contains(body, "panic") {
		h.t.Fatalf("%s %s: a stack trace or panic is in the page:\n%s", req.Method, req.URL.Path, body)
	}
	return page{status: resp.StatusCode, body: body, header: resp.Header}
}

func (h *harness) get(u string) page {
	h.t.Helper()
	req, err := http.NewRequest(http.MethodGet, h.abs(u), nil)
	if err != nil {
		h.t.Fatal(err)
	}
	return h.do(req)
}

// post sends a form as a browser on the console's own page would.
func (h *harness) post(u string, form url.Values) page {
	h.t.Helper()
	return h.postRaw(u, form.Encode(), http.Header{"Origin": {h.srv.URL}, "Sec-Fetch-Site": {"same-origin"}})
}

func (h *harness) postRaw(u, body string, hdr http.Header) page {
	h.t.Helper()
	req, err := http.NewRequest(http.MethodPost, h.abs(u), strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range hdr {
		req.Header[k] = v
	}
	return h.do(req)
}

func (h *harness) abs(u string) string {
	if strings.HasPrefix(u, "/") {
		return h.srv.URL + u
	}
	return u
}

// answersSent counts the attempts the console published (once per
// message id, as JetStream keeps them): the proof of whether anything was
// proposed.
func (h *harness) answersSent() int {
	h.t.Helper()
	return h.attempts.Count(h.t)
}

var hiddenInput = regexp.MustCompile(`<input type="hidden" name="([a-z_]+)" value="([^"]*)">`)

// formValues returns the hidden inputs of the form with id formID.
func formValues(t *testing.T, body, formID string) url.Values {
	t.Helper()
	start := strings.Index(body, `id="`+formID+`"`)
	if start < 0 {
		t.Fatalf("no form %q in page:\n%s", formID, body)
	}
	rest := body[start:]
	end := strings.Index(rest, "</form>")
	if end < 0 {
		t.Fatalf("form %q is not closed", formID)
	}
	v := url.Values{}
	for _, m := range hiddenInput.FindAllStringSubmatch(rest[:end], -1) {
		v.Set(m[1], m[2])
	}
	if v.Get("nonce") == "" || v.Get("csrf") == "" || v.Get("task_version") == "" {
		t.Fatalf("form %q lacks its hidden inputs: %v", formID, v)
	}
	return v
}

func ptr(f float64) *float64 { return &f }

// reportQuestion has a date field and a bounded number field.
func reportQuestion(job string) bridge.Question {
	return bridge.Question{
		Tenant: "acme", JobID: job, QuestionID: "q-1", TaskVersion: 3,
		Question: "When should I send the report, and how many copies?",
		Context:  "The quarterly report for the board is ready.",
		Fields: []bridge.Field{
			{Name: "on", Kind: bridge.FieldDate, Label: "Send on", Required: true},
			{Name: "copies", Kind: bridge.FieldNumber, Label: "Copies", Integer: true, Min: ptr(1), Max: ptr(9)},
		},
		WhyItMatters: "The date decides which records are included.",
		Priority:     "blocking", BlockedTools: []string{"send_report"},
		Answerers: []string{"console:alice"}, Owner: "slack:U0OWNER", Agent: "acme-support",
	}
}

func (h *harness) questionURL(identity string, q bridge.Question) string {
	return h.signer.QuestionURL(identity, q.Tenant, q.JobID, q.QuestionID, time.Hour)
}
