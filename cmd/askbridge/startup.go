package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/config"
)

// natsStartError says which NATS serve could not connect to and by which
// settings: the addresses in ASK_NATS_URL without their user names or
// passwords, and ASK_NATS_CREDS by name only (its value is a path, but
// someone may have pasted the credentials themselves into it). Any other
// error, and the embedded server's (which names ASK_NATS_LISTEN), is
// returned as it is.
func natsStartError(cfg *config.Config, err error) error {
	var ce *bridge.ConnectError
	if cfg.NATSURL == "" || !errors.As(err, &ce) {
		return err
	}
	settings := "ASK_NATS_URL"
	if cfg.NATSCreds != "" {
		settings += ", with the credentials file ASK_NATS_CREDS names"
	}
	why := ce.Err.Error()
	if errors.Is(ce.Err, nats.ErrNoServers) {
		// nats.go says so for a refused connection: the reason is gone.
		why += ": is a NATS server listening there, and reachable from this machine?"
	}
	if len(cfg.NATSCreds) >= minSecret {
		why = strings.ReplaceAll(why, cfg.NATSCreds, "the file ASK_NATS_CREDS names")
	}
	for _, secret := range natsPasswords(cfg.NATSURL) {
		why = strings.ReplaceAll(why, secret, "[redacted]")
	}
	return &startError{msg: fmt.Sprintf("nats: cannot connect to %s (%s): %s", natsAddresses(cfg.NATSURL), settings, why), err: err}
}

// natsAddresses is ASK_NATS_URL's list without user names and passwords.
func natsAddresses(list string) string {
	var out []string
	for _, one := range strings.Split(list, ",") {
		u, err := url.Parse(strings.TrimSpace(one))
		if err != nil {
			out = append(out, "an address that does not parse")
			continue
		}
		u.User = nil
		out = append(out, u.String())
	}
	return strings.Join(out, ", ")
}

// natsPasswords are the passwords (or tokens, given as the user) in
// ASK_NATS_URL, which a NATS error must not show.
func natsPasswords(list string) []string {
	var out []string
	for _, one := range strings.Split(list, ",") {
		u, err := url.Parse(strings.TrimSpace(one))
		if err != nil || u.User == nil {
			continue
		}
		secret, ok := u.User.Password()
		if !ok {
			secret = u.User.Username()
		}
		if len(secret) >= minSecret {
			out = append(out, secret)
		}
	}
	return out
}

// minSecret is the length from which a secret is redacted from a message:
// replacing a shorter one would garble it, and no NATS error quotes one.
const minSecret = 4

// startError is a start-up failure told in the operator's words, still
// wrapping the error it tells of.
type startError struct {
	msg string
	err error
}

func (e *startError) Error() string { return e.msg }
func (e *startError) Unwrap() error { return e.err }

// warnIfOpen says at start when the NATS askbridge joined (ASK_NATS_URL)
// lets a client without credentials reach askbridge's streams: anyone
// who can reach that NATS could then publish answer attempts and approve
// proposals as anyone (docs/deploy.md, "Accounts and credentials").
func warnIfOpen(list string, log *slog.Logger) {
	nc, err := nats.Connect(natsAddresses(list), nats.Name("askbridge-open-check"), nats.Timeout(2*time.Second),
		nats.NoReconnect(), nats.NoCallbacksAfterClientClose())
	if err != nil {
		return // refused: what it should do
	}
	defer nc.Close()
	reply, err := nc.Request("$JS.API.STREAM.INFO."+bridge.StreamAnswers, nil, 2*time.Second)
	if err != nil || strings.Contains(string(reply.Data), `"error"`) {
		return
	}
	log.Warn("NATS lets clients without credentials publish answer attempts: anyone who reaches it may answer and approve as anyone; run it with accounts (docs/deploy.md)",
		"nats", natsAddresses(list))
}
