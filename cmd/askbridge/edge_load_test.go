package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/config"
	"github.com/askbridge/askbridge/internal/testenv"
)

// Load on the edges: the whole service, its Slack and Discord endpoints
// hit over loopback by a bounded mix of valid, forged, stale, oversize and
// non-JSON requests, while /healthz is probed throughout. The bad requests
// are refused with 4xx before they reach NATS or the store: the answer
// attempts published equal the valid requests, exactly.

// edgeRequests is how many requests TestEdgeLoad sends to each endpoint.
// The test suite sends few, enough to check every answer; the load figures
// in docs/benchmarks.md come from -edge-requests=1200.
var edgeRequests = flag.Int("edge-requests", 200, "TestEdgeLoad: requests to each endpoint (a multiple of 20)")

// TestEdgeLoad loads the service's edges with every kind of request and
// checks each answer: a valid click is recorded (Slack: 200; Discord: a 200
// deferring the update) or the person told to retry (Slack: 503; Discord:
// a 200 with an ephemeral "please try again"), never acknowledged and
// lost; every other kind is refused by its kind. How fast is logged, not
// asserted.
func TestEdgeLoad(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("load test; skipped under -short")
	}
	perEndpoint := *edgeRequests
	if perEndpoint <= 0 || perEndpoint%20 != 0 {
		t.Fatalf("-edge-requests=%d: must be a positive multiple of 20", perEndpoint)
	}
	e := startEdgeLoad(t)
	published := countAttempts(t, e.nc)
	jobs, valid := edgeJobs(perEndpoint)
	probe := probeHealth(e.base)
	start := time.Now()
	res := e.send(jobs, edgeWorkers)
	elapsed := time.Since(start)
	probes, probeErrs := probe()

	for _, f := range res.failures[:min(len(res.failures), 10)] {
		t.Error(f)
	}
	if len(res.failures) > 10 {
		t.Errorf("... and %d more", len(res.failures)-10)
	}
	// Every recorded request's attempt was acknowledged by JetStream
	// before its response, once; one told to try again may be there too
	// (stored just after the adapter gave up on it), once at most.
	if len(res.acked) == 0 {
		t.Fatalf("no valid request was recorded")
	}
	testenv.CheckFor(t, testenv.Patience, 20*time.Millisecond, func() error {
		for _, k := range res.acked {
			if n := published.of(k); n != 1 {
				return fmt.Errorf("the attempt of %s, recorded, was published %d times; want once (%d of %d valid requests recorded)",
					k, n, len(res.acked), valid)
			}
		}
		return nil
	})
	if err := e.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	validKeys := map[string]bool{}
	for _, j := range jobs {
		if j.kind == edgeValid {
			validKeys[j.attemptKey()] = true
		}
	}
	total := published.each(func(k string, n int) {
		switch {
		case !validKeys[k]:
			t.Errorf("an attempt of %s was published, which no valid request made", k)
		case n > 1:
			t.Errorf("the attempt of %s was published %d times", k, n)
		}
	})
	if len(probeErrs) > 0 {
		t.Errorf("/healthz failed %d times during the load, first: %s", len(probeErrs), probeErrs[0])
	}
	if len(probes) == 0 {
		t.Fatal("/healthz was never probed")
	}
	logEdgeLoad(t, len(jobs), valid, elapsed, res, probes)
	t.Logf("edge load: valid requests recorded: %d of %d (told to try again: Slack %d, Discord %d); answer attempts published: %d",
		len(res.acked), valid, res.retry[0], res.retry[1], total)
}

// edgeWorkers is how many requests TestEdgeLoad has in flight, each on a
// connection of its own.
const edgeWorkers = 16

// edgeLoad is the service TestEdgeLoad loads, with one question shown on
// both platforms, and what it takes to make requests to it.
type edgeLoad struct {
	t                         *testing.T
	base                      string
	nc                        *nats.Conn // the admin's, to count attempts
	slackAPI                  string
	slackBlock, discordChoice string
	priv, otherKey            ed25519.PrivateKey
	oversize                  []byte
}

const (
	edgeSlackSecret = "8f742231b10e8888abcd99yyyzzz85a5"
	edgeDiscordUser = "3000000000000000001"
)

func startEdgeLoad(t *testing.T) *edgeLoad {
	slackAPI := edgeFakeSlack(t)
	discord := newEdgeFakeDiscord(t)
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	_, otherKey, _ := ed25519.GenerateKey(rand.Reader)
	s, _ := startTestService(t, func(c *config.Config) {
		c.SlackBotToken = "xoxb-edge-load"
		c.SlackSigningSecret = edgeSlackSecret
		c.SlackAPIURL = slackAPI.URL + "/api/"
		c.DiscordBotToken = discord.token
		c.DiscordPublicKey = hex.EncodeToString(pub)
		c.DiscordAppID = "555000111"
		c.DiscordAPIURL = discord.url
		c.Operators = []string{"slack:U0KEV", "discord:" + edgeDiscordUser}
	})
	e := &edgeLoad{t: t, base: "http://" + s.Addr(), slackAPI: slackAPI.URL, slackBlock: "ask.acme.job-load.q-1.1",
		priv: priv, otherKey: otherKey, oversize: bytes.Repeat([]byte("a"), 2<<20)}

	// One question, shown on both platforms.
	ag := agentFor(t, s)
	q := &bridge.Question{Tenant: "acme", JobID: "job-load", QuestionID: "q-1", TaskVersion: 1, Question: "Which colour?",
		Choices: []string{"red", "blue"}, Timeout: "4h",
		Route: &bridge.Route{Slack: &bridge.SlackRoute{Channel: "C0123"}, Discord: &bridge.DiscordRoute{ChannelID: "1000000000000000001"}}}
	if err := ag.Publish(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	testenv.CheckFor(t, testenv.Patience, 20*time.Millisecond, func() error {
		for _, id := range discord.customIDs() {
			if strings.HasPrefix(id, "ab:c:acme:job-load:q-1:1:") {
				e.discordChoice = id
				return nil
			}
		}
		return fmt.Errorf("no Discord card yet")
	})
	e.nc, err = nats.Connect(s.natsURL(), s.nats.Admin())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.nc.Close)
	return e
}

// attemptCount counts the answer attempts published, by attemptKey.
type attemptCount struct {
	mu sync.Mutex
	n  map[string]int
}

// countAttempts counts every answer attempt published from now on: Slack's
// by its clicker (one a request), Discord's by its interaction id.
func countAttempts(t *testing.T, nc *nats.Conn) *attemptCount {
	c := &attemptCount{n: map[string]int{}}
	sub, err := nc.Subscribe(bridge.PrefixAnswer+".>", func(m *nats.Msg) {
		var at bridge.AnswerAttempt
		_ = json.Unmarshal(m.Data, &at)
		key := at.By
		if at.Via == bridge.PlatformDiscord {
			key = at.AttemptID
		}
		c.mu.Lock()
		c.n[key]++
		c.mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return c
}

func (c *attemptCount) of(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[key]
}

// each calls f with every key counted and its count, and returns how many
// keys there are.
func (c *attemptCount) each(f func(key string, n int)) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, n := range c.n {
		f(k, n)
	}
	return len(c.n)
}

// probeHealth probes /healthz on its own connection every 10 ms until the
// function it returns is called, which returns how long each probe took
// and how each that failed did.
func probeHealth(base string) (stop func() ([]time.Duration, []string)) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}, Timeout: 10 * time.Second}
	done, probed := make(chan struct{}), make(chan struct{})
	var probes []time.Duration
	var errs []string
	go func() {
		defer close(probed)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			start := time.Now()
			resp, err := client.Get(base + "/healthz")
			if err != nil {
				errs = append(errs, err.Error())
				continue
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			probes = append(probes, time.Since(start))
			if resp.StatusCode != http.StatusOK {
				errs = append(errs, resp.Status)
			}
		}
	}()
	return func() ([]time.Duration, []string) {
		close(done)
		<-probed
		return probes, errs
	}
}

// edgeResults is what the load's answers were.
type edgeResults struct {
	failures []string
	acked    []string // the valid requests recorded, by attemptKey
	retry    [2]int   // the valid requests told to try again, by platform
	byKind   [2][edgeKinds]int
}

// edgeIdle is how long the load's client keeps a connection idle: less
// than the service's headerTimeout, which on a new connection runs from
// its accept. A connection the client dialed for a request that another,
// freed meanwhile, served lies unused in its pool; the service closes it
// unanswered once headerTimeout passes, and a POST sent on it just then
// gets EOF, which net/http does not retry (a POST is not replayable). A
// client that keeps connections idle for less than the server's timeouts
// never meets it.
const edgeIdle = headerTimeout * 2 / 5

// send sends jobs over workers connections and checks each answer.
func (e *edgeLoad) send(jobs []edgeJob, workers int) *edgeResults {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers, IdleConnTimeout: edgeIdle}, Timeout: 30 * time.Second}
	res := &edgeResults{}
	var mu sync.Mutex
	queue := make(chan edgeJob)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for j := range queue {
				status, body, failure := e.do(client, j)
				mu.Lock()
				res.record(j, status, body, failure)
				mu.Unlock()
			}
		})
	}
	for _, j := range jobs {
		queue <- j
	}
	close(queue)
	wg.Wait()
	return res
}

// do sends job j's request: its status and body, or "" and what became of
// the request's connection when it got no answer.
func (e *edgeLoad) do(client *http.Client, j edgeJob) (int, []byte, string) {
	req := e.slackRequest(j.i, j.kind)
	if j.discord {
		req = e.discordRequest(j.i, j.kind)
	}
	req, conn := traceConn(req)
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, fmt.Sprintf("%v; %s", err, conn)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, body, fmt.Sprintf("<nil>; %s", conn)
}

// record takes in the answer to job j.
func (r *edgeResults) record(j edgeJob, status int, body []byte, conn string) {
	d := 0
	if j.discord {
		d = 1
	}
	recorded, bad := status == http.StatusOK, ""
	if j.discord && j.kind == edgeValid && status == http.StatusOK {
		recorded, bad = discordRecorded(body)
	}
	switch {
	case j.kind != edgeValid:
	case recorded:
		r.acked = append(r.acked, j.attemptKey())
	case bad == "":
		r.retry[d]++
	}
	if want := edgeWantStatus(j.discord, j.kind); !slices.Contains(want, status) {
		r.failures = append(r.failures, fmt.Sprintf("request %d (%s, discord=%v): HTTP %d (%s), want %v", j.i, edgeKindNames[j.kind], j.discord, status, conn, want))
	}
	if bad != "" {
		r.failures = append(r.failures, fmt.Sprintf("request %d (valid, discord): %s", j.i, bad))
	}
	r.byKind[d][j.kind]++
}

// logEdgeLoad logs how fast the load went, as benchmarks.md reports it.
func logEdgeLoad(t *testing.T, requests, valid int, elapsed time.Duration, res *edgeResults, probes []time.Duration) {
	slices.Sort(probes)
	pct := func(p float64) time.Duration { return probes[min(len(probes)-1, int(p*float64(len(probes))))] }
	t.Logf("edge load: %d requests (%d valid) in %v over %d connections: %.0f requests/s", requests, valid, elapsed.Round(time.Millisecond), edgeWorkers,
		float64(requests)/elapsed.Seconds())
	for d, name := range []string{"slack", "discord"} {
		var parts []string
		for k, n := range res.byKind[d] {
			parts = append(parts, fmt.Sprintf("%s %d", edgeKindNames[k], n))
		}
		t.Logf("edge load: %s: %s", name, strings.Join(parts, ", "))
	}
	t.Logf("edge load: /healthz during load: %d probes, p50 %v, p99 %v, max %v", len(probes),
		pct(0.50).Round(10*time.Microsecond), pct(0.99).Round(10*time.Microsecond), probes[len(probes)-1].Round(10*time.Microsecond))
}
