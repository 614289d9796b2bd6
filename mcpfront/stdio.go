package mcpfront

import (
	"context"
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
		t.calls.wait(answered)
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
	calls inFlight
}

func (a *answering) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := a.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &answeringConn{Connection: c, calls: &a.calls}, nil
}

type answeringConn struct {
	mcp.Connection
	calls *inFlight
}

func (c *answeringConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if req, ok := msg.(*jsonrpc.Request); ok && err == nil && req.IsCall() {
		c.calls.add()
	}
	return msg, err
}

func (c *answeringConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := c.Connection.Write(ctx, msg)
	if _, ok := msg.(*jsonrpc.Response); ok {
		c.calls.done()
	}
	return err
}
