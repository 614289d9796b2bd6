package bridge

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func TestTransient(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"a stream call timing out mid-election", fmt.Errorf("nats: stream ASK_QUESTIONS: %w", context.DeadlineExceeded), true},
		{"a request timing out", fmt.Errorf("consumer: %w", nats.ErrTimeout), true},
		{"no server reachable", fmt.Errorf("nats: connect: %w", nats.ErrNoServers), true},
		{"no responders", nats.ErrNoResponders, true},
		{"JetStream temporarily unavailable", &jetstream.APIError{Code: 503, ErrorCode: 10008, Description: "JetStream system temporarily unavailable"}, true},
		{"a refused dial", fmt.Errorf("dial: %w", &net.OpError{Op: "dial", Err: errors.New("connection refused")}), true},
		{"JetStream not enabled", fmt.Errorf("nats: stream X: %w", jetstream.ErrJetStreamNotEnabled), false},
		{"a replica count the cluster refuses", &SettingError{fmt.Errorf("ASK_NATS_REPLICAS: %w", context.DeadlineExceeded)}, false},
		{"a stream askbridge cannot use", errors.New("nats: stream ASK_EVENTS exists with memory storage"), false},
		{"a stream's peers offline", &jetstream.APIError{Code: 400, ErrorCode: 10005, Description: "no suitable peers for placement, peer offline"}, true},
		{"placement tags no peer has", &jetstream.APIError{Code: 400, ErrorCode: 10005, Description: "no suitable peers for placement, tags not matched"}, false},
		{"a bad request", &jetstream.APIError{Code: 400, ErrorCode: 10003, Description: "bad request"}, false},
		{"nil", nil, false},
	} {
		if got := Transient(tc.err); got != tc.want {
			t.Errorf("%s (%v): Transient = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}
