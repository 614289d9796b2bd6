// Package principal is who may be on askbridge's NATS and what each may do
// there (docs/design.md, "Principals on the bus"): the NATS operator and
// accounts askbridge runs its embedded server with, the credentials it
// mints for agents, people and admins, the register of those credentials,
// and how the runtime learns from a message which credential sent it.
package principal

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/nats-io/nkeys"
)

// Keys are the signing keys of askbridge's NATS: the operator, the system
// account, and the three accounts principals live in. Only whoever can
// read the data directory holds them.
type Keys struct {
	Operator nkeys.KeyPair
	System   nkeys.KeyPair
	// Service is the account that holds askbridge's streams and buckets:
	// the service itself and admins connect to it.
	Service nkeys.KeyPair
	// Agents holds agents' credentials: what they publish goes straight
	// into the service account's streams and gate, on the subjects of
	// their tenant their permissions allow.
	Agents nkeys.KeyPair
	// Acting holds the credentials of agents that act for a person
	// (--acts-for), and People people's: what they publish reaches the
	// service account through an import that the server stamps with the
	// publisher's credential, for the intake to bind.
	Acting nkeys.KeyPair
	People nkeys.KeyPair
}

// keyFile is the keys as kept on disk: seeds, readable by the owner only.
type keyFile struct {
	Operator string `json:"operator"`
	System   string `json:"system"`
	Service  string `json:"service"`
	Agents   string `json:"agents"`
	Acting   string `json:"acting,omitempty"`
	People   string `json:"people"`
}

// KeysFile is where LoadOrCreateKeys keeps the keys, under the data directory.
const KeysFile = "nats-auth/keys.json"

// ErrNoKeys is LoadKeys' error when the data directory has no keys (the
// service never ran there).
var ErrNoKeys = errors.New("principal: no NATS keys in the data directory")

// LoadKeys reads the keys kept under dataDir.
func LoadKeys(dataDir string) (*Keys, error) {
	path := filepath.Join(dataDir, KeysFile)
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNoKeys
	}
	if err != nil {
		return nil, fmt.Errorf("principal: read %s: %w", path, err)
	}
	var kf keyFile
	if err := json.Unmarshal(raw, &kf); err != nil {
		return nil, fmt.Errorf("principal: %s is not askbridge's key file: %w", path, err)
	}
	k := &Keys{}
	for _, s := range []struct {
		seed string
		to   *nkeys.KeyPair
	}{{kf.Operator, &k.Operator}, {kf.System, &k.System}, {kf.Service, &k.Service}, {kf.Agents, &k.Agents}, {kf.Acting, &k.Acting}, {kf.People, &k.People}} {
		if s.seed == "" && s.to == &k.Acting {
			continue // kept by a service that has not started since: made at its start
		}
		kp, err := nkeys.FromSeed([]byte(s.seed))
		if err != nil {
			return nil, fmt.Errorf("principal: %s holds a key that cannot be read", path)
		}
		*s.to = kp
	}
	return k, nil
}

// addActing makes the acting account's key in a key file kept before
// that account was.
func addActing(dataDir string, k *Keys) error {
	path := filepath.Join(dataDir, KeysFile)
	raw, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("principal: read %s: %w", path, err)
	}
	var kf keyFile
	if err := json.Unmarshal(raw, &kf); err != nil {
		return fmt.Errorf("principal: %s is not askbridge's key file: %w", path, err)
	}
	kp, err := nkeys.CreateAccount()
	if err != nil {
		return fmt.Errorf("principal: make a key: %w", err)
	}
	seed, err := kp.Seed()
	if err != nil {
		return fmt.Errorf("principal: make a key: %w", err)
	}
	kf.Acting = string(seed)
	if raw, err = json.MarshalIndent(kf, "", "  "); err != nil {
		return err
	}
	if err := writePrivate(path, raw); err != nil {
		return err
	}
	k.Acting = kp
	return nil
}

// LoadOrCreateKeys reads the keys kept under dataDir, making them on the
// first start. The file and its folder are the owner's alone.
func LoadOrCreateKeys(dataDir string) (*Keys, error) {
	k, err := LoadKeys(dataDir)
	if err == nil && k.Acting == nil {
		err = addActing(dataDir, k)
	}
	if !errors.Is(err, ErrNoKeys) {
		return k, err
	}
	k = &Keys{}
	var kf keyFile
	for _, s := range []struct {
		make func() (nkeys.KeyPair, error)
		to   *nkeys.KeyPair
		seed *string
	}{
		{nkeys.CreateOperator, &k.Operator, &kf.Operator},
		{nkeys.CreateAccount, &k.System, &kf.System},
		{nkeys.CreateAccount, &k.Service, &kf.Service},
		{nkeys.CreateAccount, &k.Agents, &kf.Agents},
		{nkeys.CreateAccount, &k.Acting, &kf.Acting},
		{nkeys.CreateAccount, &k.People, &kf.People},
	} {
		kp, err := s.make()
		if err != nil {
			return nil, fmt.Errorf("principal: make a key: %w", err)
		}
		seed, err := kp.Seed()
		if err != nil {
			return nil, fmt.Errorf("principal: make a key: %w", err)
		}
		*s.to, *s.seed = kp, string(seed)
	}
	raw, err := json.MarshalIndent(kf, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := writePrivate(filepath.Join(dataDir, KeysFile), raw); err != nil {
		return nil, err
	}
	return k, nil
}

// writePrivate writes data to path atomically, the file mode 0600 in a
// folder of mode 0700.
func writePrivate(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("principal: make %s: %w", dir, err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("principal: %s: %w", dir, err)
	}
	tmp, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return fmt.Errorf("principal: write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("principal: write %s: %w", path, err)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("principal: write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("principal: write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("principal: write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("principal: write %s: %w", path, err)
	}
	return nil
}

func pub(kp nkeys.KeyPair) string {
	if kp == nil {
		return ""
	}
	p, _ := kp.PublicKey()
	return p
}
