package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	neturl "net/url"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/bridge/agent"
)

// agentClient connects as connect does and makes the agent client the
// commands that act as an agent use; closeNATS closes the connection.
func (c *cli) agentClient(flagURL string) (client *agent.Client, closeNATS func(), err error) {
	nc, _, err := c.connect(flagURL)
	if err != nil {
		return nil, nil, err
	}
	if client, err = agent.New(nc); err != nil {
		nc.Close()
		return nil, nil, err
	}
	return client, nc.Close, nil
}

// connect opens NATS: the flag, then ASK_NATS_URL, then ASK_NATS_LISTEN.
func (c *cli) connect(flagURL string) (*nats.Conn, jetstream.JetStream, error) {
	url := flagURL
	if url == "" {
		url = c.natsURL
	}
	var opts []nats.Option
	if url == "" {
		url = os.Getenv("ASK_NATS_URL")
		if creds := os.Getenv("ASK_NATS_CREDS"); creds != "" && url != "" {
			opts = append(opts, nats.UserCredentials(creds))
		}
	}
	if url == "" {
		listen := os.Getenv("ASK_NATS_LISTEN")
		if listen == "" {
			listen = "127.0.0.1:4222"
		}
		host, port, err := net.SplitHostPort(listen)
		if err != nil {
			return nil, nil, fmt.Errorf("ASK_NATS_LISTEN %q is not host:port", listen)
		}
		if host == "" || host == "0.0.0.0" || host == "::" {
			host = "127.0.0.1"
		}
		url = "nats://" + net.JoinHostPort(host, port)
	}
	nc, err := nats.Connect(url, append(append(opts, nats.Name("askbridge-cli")), c.natsOpts...)...)
	if err != nil {
		why := err.Error()
		if ue := (*neturl.Error)(nil); errors.As(err, &ue) {
			why = "the URL cannot be read" // its text would repeat the URL, password and all
		}
		return nil, nil, fmt.Errorf("cannot reach NATS at %s (is 'askbridge serve' running?): %s", redactURLs(url), why)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return nc, js, nil
}

// redactURLs is a comma-separated list of NATS URLs with their passwords
// and tokens hidden, for messages.
func redactURLs(list string) string {
	parts := strings.Split(list, ",")
	for i, p := range parts {
		p = strings.TrimSpace(p)
		if !strings.Contains(p, "://") {
			// nats.go reads user:pw@host as nats://user:pw@host; url.Parse
			// would read "user" as the scheme and find no password.
			p = "nats://" + p
		}
		u, err := neturl.Parse(p)
		switch {
		case err != nil:
			parts[i] = "(an unreadable URL)"
		case u.User == nil:
		default:
			if _, has := u.User.Password(); !has {
				u.User = neturl.User("xxxxx") // a token alone
			}
			parts[i] = u.Redacted()
		}
	}
	return strings.Join(parts, ",")
}

func (c *cli) request(nc *nats.Conn, subject string, req, reply any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := bridge.Request(ctx, nc, subject, req, reply)
	if errors.Is(err, nats.ErrNoResponders) {
		return errors.New("no askbridge runtime answered (is 'askbridge serve' running?)")
	}
	return err
}
