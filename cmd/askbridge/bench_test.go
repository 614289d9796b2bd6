package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/askbridge/askbridge/blockkit"
	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/internal/testenv/testmain"
)

// TestBenchClickIsASlackPayload: the bench's hand-written click reads, with
// slack-go, as the click on the card it was built from, the echoed message
// and its blocks included.
func TestBenchClickIsASlackPayload(t *testing.T) {
	t.Parallel()
	q := &bridge.Question{Tenant: "bench", JobID: "job-000007", QuestionID: "q", TaskVersion: 1,
		Question: `Which "colour"? ünïcode & <tags>`, Choices: []string{"red", "blue"}}
	blocks, text := blockkit.QuestionMessage(blockkit.Card{Question: q, AskedAt: time.Now(), Deadline: time.Now().Add(time.Hour)})
	raw, err := json.Marshal(blocks)
	if err != nil {
		t.Fatal(err)
	}
	f := &benchSlack{}
	f.keep("C000007", "1700000000.000042", string(raw), text)
	cards := f.takeCards()
	if len(cards) != 1 {
		t.Fatalf("kept %d cards", len(cards))
	}
	r := httptest.NewRequest(http.MethodPost, "/slack/interactions", strings.NewReader(cards[0].payload()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	cb, err := slack.InteractionCallbackParse(r)
	if err != nil {
		t.Fatal(err)
	}
	a := cb.ActionCallback.BlockActions
	if cb.Type != slack.InteractionTypeBlockActions || cb.User.ID != "UBENCH" || cb.Container.ChannelID != "C000007" ||
		cb.Container.MessageTs != "1700000000.000042" || len(a) != 1 || a[0].ActionID != cards[0].actionID || a[0].Value != cards[0].value {
		t.Fatalf("click read as %+v", cb)
	}
	if cb.Message.Text != text || len(cb.Message.Blocks.BlockSet) != len(blocks) {
		t.Fatalf("echoed message: text %q, %d blocks; want %q, %d", cb.Message.Text, len(cb.Message.Blocks.BlockSet), text, len(blocks))
	}
}

// TestMain lets this test binary stand in for askbridge when the bench
// starts "askbridge serve" as a child process: the children it starts
// inherit ASKBRIDGE_TEST_AS_MAIN. The tests wait far more than they
// compute, so eight run at once (see testmain.Run).
func TestMain(m *testing.M) {
	if os.Getenv("ASKBRIDGE_TEST_AS_MAIN") == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	if err := os.Setenv("ASKBRIDGE_TEST_AS_MAIN", "1"); err != nil {
		panic(err)
	}
	discordAPI.start()
	code := testmain.Run(m, 8)
	discordAPI.srv.Close()
	testmain.Exit(code)
}

// TestBenchPendingAskedThroughNATS: --fill nats asks every question as an
// agent does, waits for each card, restarts the service on the same data
// and finds them all pending.
func TestBenchPendingAskedThroughNATS(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts the service twice")
	}
	// The child's stderr is copied into errOut by another goroutine.
	var out bytes.Buffer
	errOut := &testenv.LockedBuffer{}
	c := &cli{stdout: &out, stderr: errOut}
	if code := c.bench(context.Background(), []string{"--pending", "250", "--fill", "nats", "--idle", "200ms", "--settle", "50ms"}); code != exitOK {
		t.Fatalf("bench exited %d: %s", code, errOut.String())
	}
	for _, want := range []string{"pending questions", "250 (asked through NATS, cards posted to Slack)", "start to /readyz 200", "list, one tenant's first page"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

// TestBenchServiceAsChild: --child clicks through the real Slack endpoint
// of a separate askbridge serve, and every acked click is resumed.
func TestBenchServiceAsChild(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs the baselines and a service")
	}
	var out bytes.Buffer
	errOut := &testenv.LockedBuffer{}
	c := &cli{stdout: &out, stderr: errOut}
	args := []string{"--child", "--duration", "1s", "--rate", "100", "--questions", "150", "--sync", "interval"}
	if code := c.bench(context.Background(), args); code != exitOK {
		t.Fatalf("bench exited %d: %s", code, errOut.String())
	}
	report := out.String()
	var acked, busy, failed, resumes int
	for _, line := range strings.Split(report, "\n") {
		f := strings.Fields(line)
		switch {
		case strings.HasPrefix(line, "clicks acked (HTTP 200)") && len(f) == 12:
			acked, _ = strconv.Atoi(f[4])
			busy, _ = strconv.Atoi(strings.TrimSuffix(f[9], ";"))
			failed, _ = strconv.Atoi(strings.TrimSuffix(f[11], ")"))
		case strings.HasPrefix(line, "resumes") && len(f) == 2:
			resumes, _ = strconv.Atoi(f[1])
		}
	}
	// Every click is acknowledged, or (on a machine too busy to record it
	// within Slack's three seconds) answered 503 to be tried again; none
	// fails otherwise, and every acknowledged one is resumed. One told to
	// try again may be resumed too: recorded just after the adapter gave
	// up waiting for it. How many a second goes out is the machine's: the
	// rate is the bench's figure.
	if acked == 0 || failed != 0 || resumes < acked || resumes > acked+busy {
		t.Fatalf("%d clicks acked, %d answered 503, %d failed, %d resumes; want clicks acked or told to try again, none failed, each acked resumed and no other but a 503's:\n%s",
			acked, busy, failed, resumes, report)
	}
	for _, want := range []string{"service a child process", "service RSS at the end", "baseline: SQLite commit p50 / p99"} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
	// The child's own CPU, read from /proc: some, for it decided every answer.
	if m := regexp.MustCompile(`service CPU per answer \(user \+ system\)\s+([0-9.]+) ms`).FindStringSubmatch(report); m == nil {
		t.Errorf("report lacks the service's CPU per answer:\n%s", report)
	} else if ms, _ := strconv.ParseFloat(m[1], 64); ms <= 0 {
		t.Errorf("service CPU per answer %s ms; want more than none:\n%s", m[1], report)
	}
	refused := &testenv.LockedBuffer{}
	c = &cli{stdout: &out, stderr: refused}
	if code := c.bench(context.Background(), []string{"--child", "--cpuprofile", "x"}); code != exitConfig || !strings.Contains(refused.String(), "with --child the service runs in another") {
		t.Errorf("--child with --cpuprofile exited %d (%s), want a usage mistake (2) that says why", code, refused.String())
	}
}

// TestBenchGate: --gate asks questions that block tools, then every gate
// request it sends is answered, each with the code the questions call for.
func TestBenchGate(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs a service")
	}
	var out bytes.Buffer
	errOut := &testenv.LockedBuffer{}
	c := &cli{stdout: &out, stderr: errOut}
	if code := c.bench(context.Background(), []string{"--gate", "--child", "--pending", "90", "--rate", "300", "--duration", "1s"}); code != exitOK {
		t.Fatalf("bench exited %d: %s", code, errOut.String())
	}
	report := out.String()
	for _, want := range []string{"90 pending questions in 90 jobs; 300 requests/s offered for 1s", "gate: answered  300 of 300 sent",
		"baseline: NATS echo: answered  300 of 300 sent", "gate: latency p50 / p99 / max", "baseline: SQLite single-row commit",
		"wrong decisions 0", "service CPU over the gate phase"} {
		if !strings.Contains(strings.Join(strings.Fields(report), " "), strings.Join(strings.Fields(want), " ")) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
}
