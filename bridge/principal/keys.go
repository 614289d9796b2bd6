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
	"slices"

	"github.com/nats-io/nkeys"
)

// Keys are the signing keys of askbridge's NATS: the operator, the system
// account, and the three accounts principals live in. Only whoever can
// read the data directory holds them.
//
// On an operator's own NATS, whose accounts the operator manages with nsc
// (ImportKeys), askbridge holds no operator key and none of the accounts'
// own keys: each account field is then the account's public key only, and
// askbridge signs the account's users with a signing key the account's JWT
// lists.
type Keys struct {
	// Operator and System are askbridge's own operator and system account,
	// which sign and hold the accounts' JWTs of the embedded server and of
	// `askbridge creds nats-config`; nil for an operator's own accounts.
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
	// signers are, by account public key, the signing keys askbridge signs
	// an operator's own accounts' users with.
	signers map[string]nkeys.KeyPair
	// signingKeys are, by account public key, the signing keys an
	// operator's own account's JWT lists: a user one of them signed is
	// the account's.
	signingKeys map[string][]string
}

// OwnOperator reports whether the keys are askbridge's own operator's,
// which make the accounts' JWTs (the embedded server, `askbridge creds
// nats-config`), rather than signing keys of an operator's own accounts.
func (k *Keys) OwnOperator() bool { return k.Operator != nil }

// ErrNotOwnOperator is the error of what only askbridge's own operator
// can do, asked of an operator's own accounts' signing keys.
var ErrNotOwnOperator = errors.New("the keys are signing keys of an operator's own accounts (askbridge creds import-keys), which make no accounts: that operator's NATS has them")

// keyFile is the keys as kept on disk: seeds, readable by the owner only.
type keyFile struct {
	Operator string     `json:"operator,omitempty"`
	System   string     `json:"system,omitempty"`
	Service  accountKey `json:"service"`
	Agents   accountKey `json:"agents"`
	Acting   accountKey `json:"acting,omitzero"`
	People   accountKey `json:"people"`
}

// accountKey is one account's key in the key file: the seed of the
// account's own key, a string, when askbridge is the operator; or, for an
// operator's own account, an object with the account's public key, the
// seed of a signing key of the account, and the signing keys the
// account's JWT lists, whose users askbridge takes as the account's.
type accountKey struct {
	Seed        string   `json:"-"`
	Account     string   `json:"account,omitempty"`
	SigningSeed string   `json:"signing_seed,omitempty"`
	SigningKeys []string `json:"signing_keys,omitempty"`
}

type accountKeyObject accountKey

func (a accountKey) MarshalJSON() ([]byte, error) {
	if a.Account == "" {
		return json.Marshal(a.Seed)
	}
	return json.Marshal(accountKeyObject(a))
}

func (a *accountKey) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		return json.Unmarshal(b, &a.Seed)
	}
	return json.Unmarshal(b, (*accountKeyObject)(a))
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
	return kf.keys(path)
}

// keys are the keys a key file at path holds, or what it lacks.
func (kf *keyFile) keys(path string) (*Keys, error) {
	k := &Keys{}
	accounts := []struct {
		field string
		key   accountKey
		to    *nkeys.KeyPair
	}{{"service", kf.Service, &k.Service}, {"agents", kf.Agents, &k.Agents}, {"acting", kf.Acting, &k.Acting}, {"people", kf.People, &k.People}}
	imported := false
	for _, a := range accounts {
		imported = imported || a.key.Account != ""
	}
	if !imported {
		for _, s := range []struct {
			field, seed string
			to          *nkeys.KeyPair
		}{{"operator", kf.Operator, &k.Operator}, {"system", kf.System, &k.System}} {
			kp, err := readSeed(path, s.field, s.seed)
			if err != nil {
				return nil, err
			}
			*s.to = kp
		}
		for _, a := range accounts {
			if a.key.Seed == "" && a.to == &k.Acting {
				continue // kept by a service that has not started since: made at its start
			}
			kp, err := readSeed(path, a.field, a.key.Seed)
			if err != nil {
				return nil, err
			}
			*a.to = kp
		}
		return k, nil
	}
	// An operator's own accounts: a signing key for each, and no key of
	// askbridge's own operator beside them.
	if kf.Operator != "" || kf.System != "" {
		return nil, fmt.Errorf("principal: %s holds askbridge's own operator key and signing keys of an operator's own accounts: one or the other (askbridge creds import-keys writes the second)", path)
	}
	k.signers, k.signingKeys = map[string]nkeys.KeyPair{}, map[string][]string{}
	for _, a := range accounts {
		switch {
		case a.key.Seed != "":
			return nil, fmt.Errorf("principal: %s holds the seed of the %q account's own key beside signing keys of an operator's own accounts: give its account and signing_seed instead", path, a.field)
		case a.key.Account == "":
			return nil, fmt.Errorf("principal: %s holds no key of the %q account", path, a.field)
		case !nkeys.IsValidPublicAccountKey(a.key.Account):
			return nil, fmt.Errorf("principal: %s: the %q account's \"account\" is not an account's public key", path, a.field)
		}
		if a.key.SigningSeed == "" {
			return nil, fmt.Errorf("principal: %s: the %q account has no \"signing_seed\"", path, a.field)
		}
		sk, err := nkeys.FromSeed([]byte(a.key.SigningSeed))
		if err != nil || !nkeys.IsValidPublicAccountKey(pub(sk)) {
			return nil, fmt.Errorf("principal: %s: the %q account's \"signing_seed\" is not an account signing key's seed", path, a.field)
		}
		acc, err := nkeys.FromPublicKey(a.key.Account)
		if err != nil {
			return nil, fmt.Errorf("principal: %s: the %q account's \"account\" is not an account's public key", path, a.field)
		}
		*a.to = acc
		k.signers[a.key.Account] = sk
		k.signingKeys[a.key.Account] = append(slices.Clone(a.key.SigningKeys), pub(sk))
	}
	return k, nil
}

// readSeed is the key of a seed the key file at path holds in field.
func readSeed(path, field, seed string) (nkeys.KeyPair, error) {
	if seed == "" {
		return nil, fmt.Errorf("principal: %s holds no %q key", path, field)
	}
	kp, err := nkeys.FromSeed([]byte(seed))
	if err != nil {
		return nil, fmt.Errorf("principal: %s holds a %q key that cannot be read", path, field)
	}
	return kp, nil
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
	kf.Acting = accountKey{Seed: string(seed)}
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
		{nkeys.CreateAccount, &k.Service, &kf.Service.Seed},
		{nkeys.CreateAccount, &k.Agents, &kf.Agents.Seed},
		{nkeys.CreateAccount, &k.Acting, &kf.Acting.Seed},
		{nkeys.CreateAccount, &k.People, &kf.People.Seed},
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
