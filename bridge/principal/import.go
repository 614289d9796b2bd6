package principal

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"
)

// Imported is one account whose signing key ImportKeys kept.
type Imported struct {
	Name       string // ASKBRIDGE, AGENTS, ACTING or PEOPLE
	Account    string // the account's public key
	SigningKey string // the public key of the signing key askbridge signs with
}

// importedAccounts are the accounts ImportKeys reads, by name, and the
// fields of the key file they fill.
var importedAccounts = []struct{ name, field string }{
	{AccountService, "service"}, {AccountAgents, "agents"}, {AccountActing, "acting"}, {AccountPeople, "people"},
}

// ImportKeys keeps under dataDir the keys askbridge signs credentials
// with on an operator's own NATS, whose accounts the operator manages with
// nsc (docs/deploy.md, "The same layout with nsc"). dir holds what nsc
// exports: each account's JWT, in a file ending in .jwt (nsc describe
// account NAME --raw --output-file), and the seed of one signing key of
// each, in a file ending in .nk (nsc export keys). The accounts are found
// by their names, ASKBRIDGE, AGENTS, ACTING and PEOPLE; other JWTs are
// passed over. Every .nk file must be one of these signing keys: askbridge
// takes neither the operator's key nor an account's own, which stay with
// the operator. A key file already under dataDir is replaced only when it
// is of the same accounts (the operator gave one a new signing key).
func ImportKeys(dataDir, dir string) ([]Imported, error) {
	claims, seeds, err := readExport(dir)
	if err != nil {
		return nil, err
	}
	signers := map[string]nkeys.KeyPair{} // by account name
	signerFile := map[string]string{}
	for _, path := range seeds {
		name, kp, err := matchSeed(path, claims)
		if err != nil {
			return nil, err
		}
		if first, ok := signerFile[name]; ok {
			return nil, fmt.Errorf("%s and %s are both signing keys of the account %s: keep one", first, path, name)
		}
		signers[name], signerFile[name] = kp, path
	}
	var kf keyFile
	var out []Imported
	for _, a := range importedAccounts {
		ac, sk := claims[a.name], signers[a.name]
		if sk == nil {
			return nil, fmt.Errorf("%s holds no signing key of the account %s: give the account one with 'nsc edit account %s --sk generate', then export it with 'nsc export keys --accounts --account %s --filter KEY --dir %s', KEY being the signing key 'nsc describe account %s' lists",
				dir, a.name, a.name, a.name, dir, a.name)
		}
		seed, err := sk.Seed()
		if err != nil {
			return nil, fmt.Errorf("the signing key of the account %s: %w", a.name, err)
		}
		var listed []string
		for _, key := range ac.SigningKeys.Keys() {
			if scope, _ := ac.SigningKeys.GetScope(key); scope == nil {
				listed = append(listed, key)
			}
		}
		slices.Sort(listed)
		*accountField(&kf, a.field) = accountKey{Account: ac.Subject, SigningSeed: string(seed), SigningKeys: listed}
		out = append(out, Imported{Name: a.name, Account: ac.Subject, SigningKey: pub(sk)})
	}
	if err := writeImported(dataDir, dir, kf, out); err != nil {
		return nil, err
	}
	return out, nil
}

// readExport reads what nsc exported to dir: the JWT of each imported
// account, by name, and the paths of the seeds beside them. Each account
// must have exactly one JWT there.
func readExport(dir string) (map[string]*jwt.AccountClaims, []string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", dir, err)
	}
	claims := map[string]*jwt.AccountClaims{} // by name
	from := map[string]string{}               // the file each came from, by name
	var seeds []string
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		switch {
		case e.IsDir():
		case strings.HasSuffix(e.Name(), ".nk"):
			seeds = append(seeds, path)
		case strings.HasSuffix(e.Name(), ".jwt"):
			ac, err := readAccountJWT(path)
			if err != nil {
				return nil, nil, err
			}
			if ac == nil || !isImported(ac.Name) {
				continue // another account's, or the operator's
			}
			if first, ok := from[ac.Name]; ok {
				return nil, nil, fmt.Errorf("%s and %s are both the JWT of the account %s: keep one", first, path, ac.Name)
			}
			claims[ac.Name], from[ac.Name] = ac, path
		}
	}
	for _, a := range importedAccounts {
		if claims[a.name] == nil {
			return nil, nil, fmt.Errorf("%s holds no JWT of the account %s: write it there with 'nsc describe account %s --raw --output-file %s'",
				dir, a.name, a.name, filepath.Join(dir, a.name+".jwt"))
		}
	}
	return claims, seeds, nil
}

// writeImported writes the imported keys (kf) into dataDir's key file,
// unless it already holds the keys of other accounts: every credential
// issued with those would stop working.
func writeImported(dataDir, dir string, kf keyFile, out []Imported) error {
	path := filepath.Join(dataDir, KeysFile)
	switch old, err := LoadKeys(dataDir); {
	case errors.Is(err, ErrNoKeys):
	case err != nil:
		return fmt.Errorf("%w; move it away to import the keys", err)
	default:
		for i, acc := range []nkeys.KeyPair{old.Service, old.Agents, old.Acting, old.People} {
			if pub(acc) != out[i].Account {
				return fmt.Errorf("%s holds the keys of other accounts (%s is %s there, %s in %s): every credential issued with them would stop working; move it away first to replace them",
					path, out[i].Name, orNone(pub(acc)), out[i].Account, dir)
			}
		}
	}
	raw, err := json.MarshalIndent(kf, "", "  ")
	if err != nil {
		return err
	}
	return writePrivate(path, raw)
}

// readAccountJWT reads the account JWT in a file; nil when the file is
// another kind of JWT (the operator's).
func readAccountJWT(path string) (*jwt.AccountClaims, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	token, err := jwt.ParseDecoratedJWT(raw)
	if err != nil {
		return nil, fmt.Errorf("%s is not a JWT", path)
	}
	generic, err := jwt.DecodeGeneric(token)
	if err != nil {
		return nil, fmt.Errorf("%s is not a JWT that can be read: %v", path, err)
	}
	if generic.ClaimType() != jwt.AccountClaim {
		return nil, nil
	}
	ac, err := jwt.DecodeAccountClaims(token)
	if err != nil {
		return nil, fmt.Errorf("%s is not an account JWT that can be read: %v", path, err)
	}
	return ac, nil
}

// matchSeed is the account whose signing key the seed in path is, or why
// it is none: it names the key by its public key, never its seed.
func matchSeed(path string, claims map[string]*jwt.AccountClaims) (string, nkeys.KeyPair, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", nil, fmt.Errorf("read %s: %w", path, err)
	}
	kp, err := nkeys.ParseDecoratedNKey(raw)
	if err != nil {
		return "", nil, fmt.Errorf("%s holds no key seed that can be read", path)
	}
	key := pub(kp)
	if nkeys.IsValidPublicOperatorKey(key) {
		return "", nil, fmt.Errorf("%s is the operator key %s: askbridge needs only its accounts' signing keys; keep the operator's keys away from it", path, key)
	}
	for _, a := range importedAccounts {
		ac := claims[a.name]
		if key == ac.Subject {
			return "", nil, fmt.Errorf("%s is the own key of the account %s: askbridge needs only a signing key of it; keep the account's own key away from it (export the signing key alone: nsc export keys --accounts --account %s --filter KEY)", path, a.name, a.name)
		}
		if !ac.SigningKeys.Contains(key) {
			continue
		}
		if scope, _ := ac.SigningKeys.GetScope(key); scope != nil {
			return "", nil, fmt.Errorf("%s is the signing key %s of the account %s, which is scoped: a scoped key's template replaces the permissions askbridge gives each credential; give the account a signing key without a scope (nsc edit account %s --sk generate)", path, key, a.name, a.name)
		}
		return a.name, kp, nil
	}
	return "", nil, fmt.Errorf("%s is the key %s, which is no signing key of the accounts ASKBRIDGE, AGENTS, ACTING or PEOPLE as their JWTs in the folder list them: export each JWT again after 'nsc edit account NAME --sk', or remove the file", path, key)
}

func isImported(name string) bool {
	for _, a := range importedAccounts {
		if a.name == name {
			return true
		}
	}
	return false
}

// accountField is the field of the key file that holds an account's key.
func accountField(kf *keyFile, field string) *accountKey {
	switch field {
	case "service":
		return &kf.Service
	case "agents":
		return &kf.Agents
	case "acting":
		return &kf.Acting
	}
	return &kf.People
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
