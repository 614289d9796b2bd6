package principal

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// Guard reads the credential a message carries and refuses one that is
// revoked or expired: a connection opened before a revocation can still
// publish, and nothing it publishes is recorded.
type Guard struct {
	v       *Verifier
	mu      sync.RWMutex
	revoked map[string]int64
	// read are the credentials already read and verified, by the header
	// that carried them: a client sends the same one with every message.
	read map[string]*Principal
}

// guardCache bounds Guard.read; past it the cache starts again.
const guardCache = 4096

// NewGuard checks credentials with v against the revocations given.
func NewGuard(v *Verifier, revoked map[string]int64) *Guard {
	return &Guard{v: v, revoked: revoked, read: map[string]*Principal{}}
}

// SetRevoked replaces the revocations.
func (g *Guard) SetRevoked(revoked map[string]int64) {
	g.mu.Lock()
	g.revoked = revoked
	g.mu.Unlock()
}

// Check is the principal that published a message with header h, at now.
func (g *Guard) Check(h nats.Header, now time.Time) (*Principal, error) {
	p, err := g.from(h)
	if err != nil {
		return nil, err
	}
	g.mu.RLock()
	at, revoked := g.revoked[p.UserKey]
	g.mu.RUnlock()
	if revoked && at >= p.IssuedAt {
		return nil, fmt.Errorf("credential %q is revoked", p.Name)
	}
	if p.Expires != 0 && now.Unix() >= p.Expires {
		return nil, fmt.Errorf("credential %q expired at %s", p.Name, time.Unix(p.Expires, 0).UTC().Format(time.RFC3339))
	}
	return p, nil
}

// from reads the credential a header carries, once per credential.
func (g *Guard) from(h nats.Header) (*Principal, error) {
	key := credentialOf(h)
	g.mu.RLock()
	p := g.read[key]
	g.mu.RUnlock()
	if p != nil {
		return p, nil
	}
	p, err := g.v.From(h)
	if err != nil {
		return nil, err
	}
	g.mu.Lock()
	if len(g.read) >= guardCache {
		clear(g.read)
	}
	g.read[key] = p
	g.mu.Unlock()
	return p, nil
}

// Watch applies the register's revocations under dataDir to the server
// and to g as `askbridge creds revoke` changes it, checking every tick,
// until ctx ends. A revocation applied drops the replies in flight to
// and from the service account's imports (the requester times out, and a
// gate request fails closed); a credential issued changes nothing.
func (g *Guard) Watch(ctx context.Context, dataDir string, keys *Keys, s *server.Server, tick time.Duration, log *slog.Logger) {
	stamp := RegisterStamp(dataDir)
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := RegisterStamp(dataDir)
		if now == stamp {
			continue
		}
		reg, err := OpenRegister(dataDir)
		if err != nil {
			log.Warn("credentials: the register cannot be read; revocations unchanged", "err", err)
			continue
		}
		stamp = now
		revoked := reg.Revocations()
		if g.sameRevoked(revoked) {
			// A credential issued: nothing for NATS to learn. Applying the
			// accounts' claims again would drop the replies then in flight
			// across their imports (an agent's gate request among them).
			log.Debug("credentials: register re-read; no revocation changed")
			continue
		}
		g.SetRevoked(revoked)
		if s != nil && keys != nil && keys.OwnOperator() {
			if err := keys.Apply(s, revoked); err != nil {
				log.Warn("credentials: revocations not applied to NATS", "err", err)
				continue
			}
		}
		log.Info("credentials: register re-read; revocations applied", "revoked", len(revoked))
	}
}

// sameRevoked reports whether revoked are the revocations g applies.
func (g *Guard) sameRevoked(revoked map[string]int64) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return maps.Equal(g.revoked, revoked)
}
