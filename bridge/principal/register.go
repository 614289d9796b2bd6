package principal

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// RegisterFile is the register of issued credentials, under the data
// directory. It holds no secret: names, kinds, public keys, times.
const RegisterFile = "nats-auth/credentials.json"

// Entry is one issued credential.
type Entry struct {
	Name     string    `json:"name"`
	Kind     string    `json:"kind"`
	Tenant   string    `json:"tenant,omitempty"`
	ActsFor  string    `json:"acts_for,omitempty"`
	UserKey  string    `json:"user_key"`
	IssuedAt time.Time `json:"issued_at"`
	Expires  time.Time `json:"expires,omitzero"`
	Revoked  time.Time `json:"revoked,omitzero"`
}

// Live reports whether the credential is neither revoked nor expired at now.
func (e Entry) Live(now time.Time) bool {
	return e.Revoked.IsZero() && (e.Expires.IsZero() || now.Before(e.Expires))
}

// Register is the credentials issued in a data directory.
type Register struct {
	path    string
	Entries []Entry `json:"credentials"`
}

// OpenRegister reads the register under dataDir; a missing one is empty.
func OpenRegister(dataDir string) (*Register, error) {
	r := &Register{path: filepath.Join(dataDir, RegisterFile)}
	raw, err := os.ReadFile(r.path)
	if errors.Is(err, fs.ErrNotExist) {
		return r, nil
	}
	if err != nil {
		return nil, fmt.Errorf("principal: read %s: %w", r.path, err)
	}
	if err := json.Unmarshal(raw, r); err != nil {
		return nil, fmt.Errorf("principal: %s is not askbridge's register of credentials: %w", r.path, err)
	}
	return r, nil
}

// Find is the live or revoked credential of that name, if any.
func (r *Register) Find(name string) (Entry, bool) {
	i := slices.IndexFunc(r.Entries, func(e Entry) bool { return e.Name == name })
	if i < 0 {
		return Entry{}, false
	}
	return r.Entries[i], true
}

// Add records an issued credential. A name is used once: a live
// credential's name is refused; a revoked or expired one's is replaced.
func (r *Register) Add(e Entry, now time.Time) error {
	if old, ok := r.Find(e.Name); ok && old.Live(now) {
		return fmt.Errorf("a credential named %q exists; revoke it first or choose another --name", e.Name)
	}
	r.Entries = slices.DeleteFunc(r.Entries, func(x Entry) bool { return x.Name == e.Name && x.Revoked.IsZero() })
	r.Entries = append(r.Entries, e)
	return nil
}

// Revoke marks the credential named name revoked at now.
func (r *Register) Revoke(name string, now time.Time) error {
	for i, e := range r.Entries {
		if e.Name == name && e.Revoked.IsZero() {
			r.Entries[i].Revoked = now
			return nil
		}
	}
	names := make([]string, 0, len(r.Entries))
	for _, e := range r.Entries {
		if e.Live(now) {
			names = append(names, e.Name)
		}
	}
	if len(names) == 0 {
		return fmt.Errorf("no credential named %q; none are issued", name)
	}
	return fmt.Errorf("no credential named %q; issued: %s", name, strings.Join(names, ", "))
}

// Revocations are the revoked credentials' user keys and when they were
// revoked, as JWT account revocations take them.
func (r *Register) Revocations() map[string]int64 {
	out := map[string]int64{}
	for _, e := range r.Entries {
		if !e.Revoked.IsZero() {
			out[e.UserKey] = e.Revoked.Unix()
		}
	}
	return out
}

// Save writes the register atomically, readable by the owner only.
func (r *Register) Save() error {
	raw, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return writePrivate(r.path, raw)
}

// Stamp is the register file's modification time and size, to notice a
// change made by `askbridge creds` while the service runs.
func RegisterStamp(dataDir string) string {
	st, err := os.Stat(filepath.Join(dataDir, RegisterFile))
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%d/%d", st.ModTime().UnixNano(), st.Size())
}
