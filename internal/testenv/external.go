package testenv

import (
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// ExternalNATS is an operator's nats-server with JetStream, on a fixed
// loopback port so that it can be restarted where askbridge reaches it.
type ExternalNATS struct {
	t    *testing.T
	port int
	dir  string
	ns   *server.Server
}

// StartExternalNATS starts one; it stops with the test.
func StartExternalNATS(t *testing.T) *ExternalNATS {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	e := &ExternalNATS{t: t, port: port, dir: t.TempDir()}
	e.start()
	t.Cleanup(e.stop)
	return e
}

// URL is where askbridge reaches it (ASK_NATS_URL).
func (e *ExternalNATS) URL() string { return "nats://127.0.0.1:" + strconv.Itoa(e.port) }

func (e *ExternalNATS) start() {
	e.t.Helper()
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: e.port, JetStream: true, StoreDir: e.dir, NoSigs: true, NoLog: true})
	if err != nil {
		e.t.Fatal(err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		e.t.Fatal("nats-server did not start")
	}
	e.ns = ns
}

func (e *ExternalNATS) stop() {
	if e.ns != nil {
		e.ns.Shutdown()
		e.ns.WaitForShutdown()
		e.ns = nil
	}
}

// Restart stops the server and starts it again on the same port, with its
// store kept or, with wipe, emptied (streams, consumers, buckets gone).
func (e *ExternalNATS) Restart(wipe bool) {
	e.t.Helper()
	e.stop()
	if wipe {
		e.dir = e.t.TempDir()
	}
	e.start()
}
