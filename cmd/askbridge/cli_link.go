package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	iofs "io/fs"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bots/console"
	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/config"
)

// link mints a signed console link with the configured console secret.
func (c *cli) link(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("askbridge link", flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	as := fs.String("as", "", "the identity the link acts as, e.g. console:alice (required)")
	question := fs.String("question", "", "TENANT/JOB/QUESTION: a link to one question")
	job := fs.String("job", "", "TENANT/JOB: a link to one job")
	ttl := fs.Duration("ttl", 24*time.Hour, "how long the link is valid")
	if code, ok := c.parse(fs, args, false); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return c.usageError("link", "takes no arguments, not %q (name the identity with --as)", fs.Arg(0))
	}
	if err := bridge.CheckIdentity(*as); err != nil {
		return c.usageError("link", "--as: %v", err)
	}
	if *ttl <= 0 {
		return c.usageError("link", "--ttl must be positive")
	}
	cfg, err := config.Load()
	if err != nil {
		return c.fail("%v", err)
	}
	// Only the service makes a secret: one made here would sign links
	// the service refuses.
	var secret []byte
	if cfg.ConsoleSecret == "" && cfg.Shared() {
		if secret, err = c.sharedConsoleSecret(ctx); err != nil {
			return c.fail("%v", err)
		}
	} else if secret, err = readConsoleSecret(cfg); errors.Is(err, iofs.ErrNotExist) {
		return c.fail("no console secret: ASK_CONSOLE_SECRET is not set and %s does not exist; "+
			"set ASK_CONSOLE_SECRET or ASK_DATA_DIR as the service has them (the service makes the file when it first starts)", consoleSecretPath(cfg))
	} else if err != nil {
		return c.fail("%v (set ASK_CONSOLE_SECRET or ASK_DATA_DIR as the service has them)", err)
	}
	signer := console.Signer{PublicURL: cfg.BaseURL(), Secret: secret}
	switch {
	case *question != "":
		parts := strings.Split(*question, "/")
		if len(parts) != 3 {
			return c.usageError("link", "--question takes TENANT/JOB/QUESTION")
		}
		if err := checkTokens(parts, "tenant", "job", "question"); err != nil {
			return c.usageError("link", "--question: %v", err)
		}
		fmt.Fprintln(c.stdout, signer.QuestionURL(*as, parts[0], parts[1], parts[2], *ttl))
	case *job != "":
		parts := strings.Split(*job, "/")
		if len(parts) != 2 {
			return c.usageError("link", "--job takes TENANT/JOB")
		}
		if err := checkTokens(parts, "tenant", "job"); err != nil {
			return c.usageError("link", "--job: %v", err)
		}
		fmt.Fprintln(c.stdout, signer.JobURL(*as, parts[0], parts[1], *ttl))
	default:
		fmt.Fprintln(c.stdout, signer.ListURL(*as, *ttl))
	}
	return exitOK
}

// sharedConsoleSecret reads the console secret the replicas share
// (ASK_STORE=jetstream) from NATS.
func (c *cli) sharedConsoleSecret(ctx context.Context) ([]byte, error) {
	nc, js, err := c.connect("")
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	kv, err := js.KeyValue(ctx, SecretsBucket)
	if err == nil {
		var secret []byte
		if secret, err = sharedConsoleSecret(ctx, kv); err == nil {
			return secret, nil
		}
	}
	if errors.Is(err, jetstream.ErrBucketNotFound) || errors.Is(err, iofs.ErrNotExist) {
		return nil, fmt.Errorf("no console secret: ASK_CONSOLE_SECRET is not set and the bucket %s holds none; "+
			"set ASK_CONSOLE_SECRET as the service has it, or start the service once (it makes the secret)", SecretsBucket)
	}
	return nil, err
}

// checkTokens checks ids the console opens (a link to others it refuses as
// not valid), naming each by what.
func checkTokens(ids []string, what ...string) error {
	for i, id := range ids {
		if err := bridge.CheckToken(what[i], id); err != nil {
			return err
		}
	}
	return nil
}
