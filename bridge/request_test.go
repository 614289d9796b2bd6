package bridge

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// TestRequest checks the one helper for the runtime's API: a reply is
// decoded, a reply that is not JSON and a runtime that is not running are
// errors a caller can tell apart.
func TestRequest(t *testing.T) {
	n := startNATS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for subject, reply := range map[string]string{"ask.v1.api.test-ok": `{"questions":[{"question_id":"q-1"}]}`, "ask.v1.api.test-bad": `not json`} {
		sub, err := n.Conn.Subscribe(subject, func(m *nats.Msg) { _ = m.Respond([]byte(reply)) })
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = sub.Unsubscribe() }()
	}
	var ok ListReply
	if err := Request(ctx, n.Conn, "ask.v1.api.test-ok", ListRequest{As: "cli:kevin"}, &ok); err != nil || len(ok.Questions) != 1 || ok.Questions[0].QuestionID != "q-1" {
		t.Fatalf("reply %+v, %v", ok, err)
	}
	var bad ListReply
	if err := Request(ctx, n.Conn, "ask.v1.api.test-bad", ListRequest{}, &bad); !errors.Is(err, ErrBadReply) {
		t.Fatalf("a reply that is not JSON: %v, want ErrBadReply", err)
	}
	var none ListReply
	if err := Request(ctx, n.Conn, "ask.v1.api.test-none", ListRequest{}, &none); !errors.Is(err, nats.ErrNoResponders) {
		t.Fatalf("no runtime: %v, want nats.ErrNoResponders", err)
	}
}
