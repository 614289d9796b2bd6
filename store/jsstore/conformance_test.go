package jsstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/askbridge/askbridge/store/jsstore"
	"github.com/askbridge/askbridge/store/record"
	"github.com/askbridge/askbridge/store/storetest"
)

// The JetStream store is a runtime store, as the SQLite one is.
var (
	_ record.Backend     = (*jsstore.Store)(nil)
	_ record.RelayLeaser = (*jsstore.Store)(nil)
)

// openJetStream opens a JetStream store on an in-process nats-server of
// its own, for one test of the conformance suite.
func openJetStream(t *testing.T) storetest.Store {
	t.Helper()
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server did not start")
	}
	t.Cleanup(ns.Shutdown)
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	s, err := jsstore.Open(context.Background(), nc, jsstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Every area of the conformance suite runs on JetStream, one test an area
// so that a failure names its area.
var _ storetest.Open = openJetStream

func TestConformanceLadder(t *testing.T) {
	t.Parallel()
	storetest.RunLadder(t, openJetStream)
}

func TestConformanceOutbox(t *testing.T) {
	t.Parallel()
	storetest.RunOutbox(t, openJetStream)
}

func TestConformanceQueue(t *testing.T) {
	t.Parallel()
	storetest.RunQueue(t, openJetStream)
}

func TestConformanceQuestions(t *testing.T) {
	t.Parallel()
	storetest.RunQuestions(t, openJetStream)
}

func TestConformanceTrace(t *testing.T) {
	t.Parallel()
	storetest.RunTrace(t, openJetStream)
}

func TestConformanceSafety(t *testing.T) {
	t.Parallel()
	storetest.RunSafety(t, openJetStream)
}

func TestConformanceDecide(t *testing.T) {
	t.Parallel()
	storetest.RunDecide(t, openJetStream)
}
