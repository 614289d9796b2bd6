package mcpfront

import (
	"context"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// RunStdio serves one client on stdin and stdout until it leaves or ctx
// ends. When ctx ends, the calls waiting for a person end first, each
// saying how to wait for its question again (as Stop ends them), and the
// connection closes once every call has its answer written: the SDK
// writes no answer once its connection is closing, and a call's context
// ends with the connection's, which would end a wait without the
// re-attach sentence.
func (f *Front) RunStdio(ctx context.Context) error {
	run, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	t := &answering{Transport: &mcp.StdioTransport{}}
	ss, err := f.srv.Connect(run, t, nil)
	if err != nil {
		return err
	}
	defer context.AfterFunc(ctx, func() {
		f.stop()
		answered, done := context.WithTimeout(run, stdioStopWait)
		defer done()
		t.wait(answered)
		cancel()
		_ = ss.Close()
	})()
	if err := ss.Wait(); ctx.Err() == nil {
		return err
	}
	return ctx.Err()
}

// stdioStopWait bounds how long RunStdio waits, once ctx ended, for the
// calls to be answered: a wait ends at once, so only a call that hangs
// takes it.
const stdioStopWait = 10 * time.Second

// answering is a transport that counts the client's calls not answered
// yet: each call read, less each answer written.
type answering struct {
	mcp.Transport
	mu      sync.Mutex
	pending int
	none    chan struct{} // closed when pending drops to 0
}

func (a *answering) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := a.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &answeringConn{Connection: c, a: a}, nil
}

// wait returns once every call read is answered, or when ctx ends.
func (a *answering) wait(ctx context.Context) {
	a.mu.Lock()
	if a.pending == 0 {
		a.mu.Unlock()
		return
	}
	none := a.none
	a.mu.Unlock()
	select {
	case <-none:
	case <-ctx.Done():
	}
}

// add counts n more calls (1) or answers (-1). An answer to no call read
// counts nothing.
func (a *answering) add(n int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.pending+n < 0 {
		return
	}
	if a.pending == 0 {
		a.none = make(chan struct{})
	}
	if a.pending += n; a.pending == 0 {
		close(a.none)
	}
}

type answeringConn struct {
	mcp.Connection
	a *answering
}

func (c *answeringConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if req, ok := msg.(*jsonrpc.Request); ok && err == nil && req.IsCall() {
		c.a.add(1)
	}
	return msg, err
}

func (c *answeringConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := c.Connection.Write(ctx, msg)
	if _, ok := msg.(*jsonrpc.Response); ok {
		c.a.add(-1)
	}
	return err
}
