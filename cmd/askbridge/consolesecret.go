package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/config"
)

// minConsoleSecret is the shortest secret taken, as for ASK_CONSOLE_SECRET.
const minConsoleSecret = 16

// SecretsBucket holds, with ASK_STORE=jetstream, the console's link secret
// (key "console") that every replica signs and checks links with: made once
// by the first replica to start, never replaced (a new one would void every
// link given).
const SecretsBucket = "ASK_SECRETS"

const consoleSecretKey = "console"

// consoleSecret is the key of signed console links: ASK_CONSOLE_SECRET;
// else, when replicas share the record, the one in SecretsBucket (made by
// whichever replica comes first); else the one kept in the data directory.
func (s *service) consoleSecret(ctx context.Context) ([]byte, error) {
	if s.cfg.ConsoleSecret != "" || !s.cfg.Shared() {
		return consoleSecret(s.cfg)
	}
	replicas := 0 // as the events stream has, as the adapters' buckets
	if s.cfg.NATSURL != "" && s.cfg.NATSReplicasSet {
		replicas = s.cfg.NATSReplicas
	}
	kv, err := bridge.EnsureKV(ctx, s.nats.JS, jetstream.KeyValueConfig{
		Bucket: SecretsBucket, Description: "askbridge: secrets every replica shares (the console's link key)",
		History: 1, Storage: jetstream.FileStorage, Replicas: replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("console secret: %w", err)
	}
	for {
		secret, err := sharedConsoleSecret(ctx, kv)
		if !errors.Is(err, fs.ErrNotExist) {
			return secret, err
		}
		generated, err := newConsoleSecret()
		if err != nil {
			return nil, err
		}
		_, err = kv.Write(ctx, consoleSecretKey, 0, generated, 0)
		switch {
		case err == nil:
			s.log.Info("console secret made in the bucket " + SecretsBucket + ", shared by every replica")
			return generated, nil
		case !errors.Is(err, jetstream.ErrKeyExists):
			return nil, fmt.Errorf("console secret: keep it in %s: %w", SecretsBucket, err)
		}
		// Another replica made it meanwhile: read theirs.
	}
}

// keyReader reads a key of a bucket: the service's bucket (bridge.KV) or
// the CLI's (jetstream.KeyValue).
type keyReader interface {
	Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error)
}

// sharedConsoleSecret reads the console secret from SecretsBucket; an error
// wrapping fs.ErrNotExist when no replica has made it yet.
func sharedConsoleSecret(ctx context.Context, kv keyReader) ([]byte, error) {
	e, err := kv.Get(ctx, consoleSecretKey)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, fmt.Errorf("console secret: none in %s: %w", SecretsBucket, fs.ErrNotExist)
	}
	if err != nil {
		return nil, fmt.Errorf("console secret: read it from %s: %w", SecretsBucket, err)
	}
	if len(e.Value()) < minConsoleSecret {
		return nil, fmt.Errorf("console secret: %s holds %d characters under %q; it needs at least %d (delete the key to have one made)",
			SecretsBucket, len(e.Value()), consoleSecretKey, minConsoleSecret)
	}
	return e.Value(), nil
}

// newConsoleSecret is 256 random bits in hex.
func newConsoleSecret() ([]byte, error) {
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return nil, fmt.Errorf("console secret: %w", err)
	}
	return []byte(hex.EncodeToString(raw[:])), nil
}

// consoleSecret is ASK_CONSOLE_SECRET, or a random secret kept in the data
// directory so links survive restarts.
func consoleSecret(cfg *config.Config) ([]byte, error) {
	secret, err := readConsoleSecret(cfg)
	if !errors.Is(err, fs.ErrNotExist) {
		return secret, err
	}
	if err := os.MkdirAll(cfg.DataDir, 0o750); err != nil {
		return nil, fmt.Errorf("console secret: data dir %s: %w", cfg.DataDir, err)
	}
	generated, err := newConsoleSecret()
	if err != nil {
		return nil, err
	}
	path := consoleSecretPath(cfg)
	if err := os.WriteFile(path, append(generated, '\n'), 0o600); err != nil {
		return nil, fmt.Errorf("console secret: write %s: %w", path, err)
	}
	return generated, nil
}

func consoleSecretPath(cfg *config.Config) string {
	return filepath.Join(cfg.DataDir, "console.secret")
}

// readConsoleSecret is ASK_CONSOLE_SECRET, or the secret kept in the data
// directory; an error wrapping fs.ErrNotExist when there is neither.
func readConsoleSecret(cfg *config.Config) ([]byte, error) {
	if cfg.ConsoleSecret != "" {
		return []byte(cfg.ConsoleSecret), nil
	}
	path := consoleSecretPath(cfg)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("console secret: %w", err)
	}
	// Kept, never replaced: a new secret would void every link given.
	secret := strings.TrimSpace(string(b))
	if len(secret) < minConsoleSecret {
		return nil, fmt.Errorf("console secret: %s holds %d characters; it needs at least %d (delete it to have one generated)", path, len(secret), minConsoleSecret)
	}
	return []byte(secret), nil
}
