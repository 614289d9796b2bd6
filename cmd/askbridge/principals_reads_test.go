package main

import (
	"context"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/config"
	"github.com/askbridge/askbridge/internal/testenv"
)

// TestPersonReadsOnlyTheirTenantsFigures: a person's credential reads no
// agent's resumes, and the stats of the tenants it holds a role in only:
// every tenant's with a role in all of them, one it names with a role in
// it, nothing without.
func TestPersonReadsOnlyTheirTenantsFigures(t *testing.T) {
	t.Parallel()
	s, cfg := startTestService(t, func(c *config.Config) {
		c.Operators, c.Readers = []string{"cli:kevin", "acme/cli:bob"}, []string{"beta/cli:bob"}
	})
	admin := agentFor(t, s)
	kevin, _, _ := testCLI(s, "cli:kevin")
	ctx := context.Background()
	for _, tenant := range []string{"acme", "other"} {
		job := "job-" + tenant
		ch := askAsync(t, admin, &bridge.Question{Tenant: tenant, JobID: job, QuestionID: "q-1", Question: "Which colour?", Choices: []string{"red", "blue"}})
		waitPending(t, kevin, job, "q-1")
		if code := kevin.answer(ctx, []string{"--tenant", tenant, job, "q-1", "red"}); code != exitOK {
			t.Fatalf("answer in %s: exit %d", tenant, code)
		}
		waitOutcome(t, ch)
	}
	mallory := connectAs(t, s, mintCreds(t, cfg, "person", "--as", "cli:mallory"))
	bobCreds := mintCreds(t, cfg, "person", "--as", "cli:bob")
	bob := connectAs(t, s, bobCreds)
	kevinCreds := connectAs(t, s, mintCreds(t, cfg, "person", "--as", "cli:kevin"))
	rctx, cancel := context.WithTimeout(ctx, testenv.Patience)
	defer cancel()

	for who, nc := range map[string]*nats.Conn{"cli:mallory": mallory, "cli:kevin": kevinCreds} {
		var res bridge.ResumesReply
		if err := bridge.Request(rctx, nc, bridge.APIResumes, bridge.ResumesRequest{Tenant: "other", JobID: "job-other", QuestionID: "q-1"}, &res); err != nil {
			t.Fatal(err)
		}
		if len(res.Resumes) != 0 || !strings.Contains(res.Error, who+" is a person") {
			t.Errorf("%s read resumes: %+v", who, res)
		}
	}

	stats := func(nc *nats.Conn, tenant string) bridge.StatsReply {
		t.Helper()
		var r bridge.StatsReply
		if err := bridge.Request(rctx, nc, bridge.APIStats, bridge.StatsRequest{Tenant: tenant}, &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	tenantsOf := func(r bridge.StatsReply) string {
		var out []string
		if r.Clarification != nil {
			for _, g := range r.Clarification.Groups {
				out = append(out, g.Tenant)
			}
		}
		return strings.Join(out, ",")
	}
	refused := []struct {
		nc     *nats.Conn
		tenant string
		want   string
	}{
		{mallory, "", "stats: cli:mallory holds no role"},
		{mallory, "acme", "stats: cli:mallory holds no role"},
		{bob, "", "stats: cli:bob holds roles in acme and beta only: name one of them"},
		{bob, "other", "stats: cli:bob holds no role in tenant other"},
	}
	for _, c := range refused {
		if r := stats(c.nc, c.tenant); !strings.Contains(r.Error, c.want) || r.ByState != nil || r.Clarification != nil {
			t.Errorf("stats of %q for a person: %+v, want refused with %q", c.tenant, r, c.want)
		}
	}
	if r := stats(bob, "acme"); r.Error != "" || r.ByState != nil || tenantsOf(r) != "acme" {
		t.Errorf("stats of acme for its operator: %+v (tenants %q), want acme's measures only", r, tenantsOf(r))
	}
	var out, errOut strings.Builder
	c := &cli{stdout: &out, stderr: &errOut, natsURL: s.natsURL(), creds: bobCreds}
	if code := c.stats(ctx, []string{"--tenant", "acme"}); code != exitOK || strings.Contains(out.String(), "outbox backlog") ||
		!strings.Contains(out.String(), "Clarification, questions asked since") {
		t.Errorf("askbridge stats --tenant acme for its operator: exit %d\n%s%s", code, out.String(), errOut.String())
	}
	if r := stats(kevinCreds, ""); r.Error != "" || r.ByState[bridge.StateAnswered] != 2 || tenantsOf(r) != "acme,other" {
		t.Errorf("stats for an operator of every tenant: %+v (tenants %q)", r, tenantsOf(r))
	}
}
