package bridge

import (
	"context"
	"errors"
	"net"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Transient says err is a NATS cluster not ready yet rather than a
// setting that cannot work: NATS unreachable or reconnecting, a request
// nobody answered in time (JetStream electing its meta leader, a stream
// without its leader), or JetStream saying it is temporarily unavailable.
// A service starting waits out a transient error (docs/deploy.md, "A
// start that waits"); anything else, a SettingError first, stops it.
// jsErrNoSuitablePeers is nats-server's "no suitable peers for placement".
const jsErrNoSuitablePeers = 10005

func Transient(err error) bool {
	if err == nil {
		return false
	}
	var se *SettingError
	var ce *ConnectError
	if errors.As(err, &se) || errors.As(err, &ce) {
		// Nothing answered at the URL, or the server refused the
		// credentials: a setting to fix, which the start names and stops
		// for (a supervisor starts it again), not a cluster electing.
		return false
	}
	for _, t := range []error{context.DeadlineExceeded, nats.ErrTimeout, nats.ErrNoResponders, nats.ErrNoServers,
		nats.ErrConnectionClosed, nats.ErrDisconnected, nats.ErrConnectionReconnecting, jetstream.ErrNoStreamResponse} {
		if errors.Is(err, t) {
			return true
		}
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && apiErr.ErrorCode == jsErrNoSuitablePeers {
		// Peers offline come back; too few peers, or tags that match
		// none, are a setting.
		return strings.Contains(apiErr.Description, "offline")
	}
	if errors.As(err, &apiErr) {
		// 503 is JetStream's "temporarily unavailable" (no meta leader, a
		// cluster that lost its quorum), but also a JetStream that is not
		// switched on at all: that one is a setting.
		return apiErr.Code == 503 && apiErr.ErrorCode != jetstream.JSErrCodeJetStreamNotEnabled &&
			apiErr.ErrorCode != jetstream.JSErrCodeJetStreamNotEnabledForAccount
	}
	var ne net.Error
	var oe *net.OpError
	return errors.As(err, &ne) && ne.Timeout() || errors.As(err, &oe) && oe.Op == "dial"
}
