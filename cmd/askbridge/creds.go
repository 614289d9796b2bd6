package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/bridge/principal"
)

const credsUsage = `askbridge creds — credentials for askbridge's NATS (docs/contract.md, "Principals on the bus")

Usage:
  askbridge creds agent --tenant T [--name N] [--acts-for ID] [--expires D] --out FILE
  askbridge creds person --as ID [--expires D] --out FILE
  askbridge creds admin [--name N] [--expires D] --out FILE
  askbridge creds revoke NAME
  askbridge creds list
  askbridge creds nats-config --out FILE   the accounts a NATS cluster includes (docs/deploy.md)
  askbridge creds import-keys --dir DIR    sign with an operator's own accounts' signing keys, exported from nsc (docs/deploy.md)

They read ASK_DATA_DIR (default ./data), whose keys only its owner can read,
and work whether or not the service runs; a revocation takes effect within
seconds. FILE is a standard NATS .creds file (nats --creds, nats.go
nats.UserCredentials); its holder reads replies on the inbox prefix printed.
`

// creds makes, revokes and lists credentials.
func (c *cli) credsCmd(_ context.Context, args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(c.stdout, credsUsage)
		if len(args) == 0 {
			return exitConfig
		}
		return exitOK
	}
	settings, err := c.settings()
	if err != nil {
		fmt.Fprintln(c.stderr, "askbridge creds: "+err.Error())
		return exitConfig
	}
	dataDir := settings.DataDir
	switch args[0] {
	case principal.KindAgent, principal.KindPerson, principal.KindAdmin:
		return c.credsMint(dataDir, args[0], args[1:])
	case "revoke":
		return c.credsRevoke(dataDir, settings.NATSURL != "", args[1:])
	case "list":
		return c.credsList(dataDir, args[1:])
	case "nats-config":
		return c.credsNATSConfig(dataDir, args[1:])
	case "import-keys":
		return c.credsImportKeys(dataDir, args[1:])
	}
	fmt.Fprintf(c.stderr, "askbridge: creds: unknown command %q\n\n%s", args[0], credsUsage)
	return exitConfig
}

func (c *cli) credsMint(dataDir, kind string, args []string) int {
	fs := flag.NewFlagSet("askbridge creds", flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	out := fs.String("out", "", "the .creds file to write (required)")
	expires := fs.Duration("expires", 0, "how long the credential lasts, e.g. 720h (default: until revoked)")
	var tenant, name, actsFor, as *string
	switch kind {
	case principal.KindAgent:
		tenant = fs.String("tenant", "", "the agent's tenant (required)")
		name = fs.String("name", "", "the credential's name (default: <tenant>-agent-<random>)")
		actsFor = fs.String("acts-for", "", "the owner of every question asked with it, e.g. slack:U0OWNER")
	case principal.KindPerson:
		as = fs.String("as", "", "the person's identity, e.g. cli:alice (required; it is the credential's name)")
	case principal.KindAdmin:
		name = fs.String("name", "", "the credential's name (default: admin-<random>)")
	}
	if code, ok := c.parse(fs, args, false); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return c.usageError("creds", "%s takes no arguments, only flags", kind)
	}
	spec, err := credsSpec(kind, tenant, name, actsFor, as)
	if err != nil {
		return c.usageError("creds", "%s: %v", kind, err)
	}
	if *out == "" {
		return c.usageError("creds", "%s: --out FILE is required", kind)
	}
	if *expires < 0 {
		return c.usageError("creds", "%s: --expires must be positive", kind)
	}
	now := time.Now()
	if *expires > 0 {
		spec.Expires = now.Add(*expires)
	}
	keys, err := principal.LoadOrCreateKeys(dataDir)
	if err != nil {
		return c.fail("%v", err)
	}
	reg, err := principal.OpenRegister(dataDir)
	if err != nil {
		return c.fail("%v", err)
	}
	issued, err := keys.Mint(spec)
	if err != nil {
		return c.fail("creds %s: %v", kind, err)
	}
	entry := principal.Entry{Name: spec.Name, Kind: kind, Tenant: spec.Tenant, ActsFor: spec.ActsFor,
		UserKey: issued.UserKey, IssuedAt: time.Unix(issued.IssuedAt, 0).UTC(), Expires: spec.Expires.UTC()}
	if err := reg.Add(entry, now); err != nil {
		return c.fail("creds %s: %v", kind, err)
	}
	if err := os.WriteFile(*out, issued.Creds, 0o600); err != nil {
		return c.fail("creds %s: %v", kind, err)
	}
	if err := os.Chmod(*out, 0o600); err != nil {
		return c.fail("creds %s: %v", kind, err)
	}
	if err := reg.Save(); err != nil {
		os.Remove(*out)
		return c.fail("creds %s: %v", kind, err)
	}
	fmt.Fprintf(c.stdout, "name: %s\ninbox prefix: %s.\nwritten: %s\n", spec.Name, principal.InboxPrefix(spec.Name), *out)
	return exitOK
}

// credsSpec checks the flags of a kind of credential.
func credsSpec(kind string, tenant, name, actsFor, as *string) (principal.Spec, error) {
	spec := principal.Spec{Kind: kind}
	deref := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	spec.Tenant, spec.Name, spec.ActsFor = deref(tenant), deref(name), deref(actsFor)
	switch kind {
	case principal.KindAgent:
		if err := bridge.CheckToken("--tenant", spec.Tenant); err != nil {
			return spec, err
		}
		if spec.ActsFor != "" {
			if err := bridge.CheckIdentity(spec.ActsFor); err != nil {
				return spec, fmt.Errorf("--acts-for: %w", err)
			}
		}
		spec.Name = cmp.Or(spec.Name, spec.Tenant+"-agent-"+randomHex(3))
	case principal.KindPerson:
		if err := bridge.CheckIdentity(deref(as)); err != nil {
			return spec, fmt.Errorf("--as: %w", err)
		}
		spec.Name = *as
	case principal.KindAdmin:
		spec.Name = cmp.Or(spec.Name, "admin-"+randomHex(3))
	}
	return spec, principal.CheckName(spec.Name)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// credsRevoke revokes a credential in the register. The embedded server
// drops it at once; the nodes of a cluster (ASK_NATS_URL) only once they
// are given the accounts again, which the output says.
func (c *cli) credsRevoke(dataDir string, cluster bool, args []string) int {
	if len(args) != 1 {
		return c.usageError("creds", "revoke takes the credential's NAME (see 'askbridge creds list')")
	}
	reg, err := principal.OpenRegister(dataDir)
	if err != nil {
		return c.fail("%v", err)
	}
	var entry principal.Entry
	for _, e := range reg.Entries {
		if e.Name == args[0] && e.Revoked.IsZero() {
			entry = e
		}
	}
	if err := reg.Revoke(args[0], time.Now()); err != nil {
		return c.fail("creds revoke: %v", err)
	}
	if err := reg.Save(); err != nil {
		return c.fail("creds revoke: %v", err)
	}
	if keys, err := principal.LoadKeys(dataDir); err == nil && !keys.OwnOperator() {
		// The operator's NATS learns of it from the operator alone.
		fmt.Fprintf(c.stdout, "revoked: %s (the replicas that read this register refuse what it publishes through their intake within seconds)\n"+
			"for NATS to refuse it, the operator revokes it there: nsc revocations add-user --account %s --user-public-key %s, then pushes the account (nsc push --account %s) or writes the configuration again and reloads each node\n",
			args[0], principal.AccountOf(entry.Kind, entry.ActsFor != ""), entry.UserKey, principal.AccountOf(entry.Kind, entry.ActsFor != ""))
		return exitOK
	}
	if cluster {
		fmt.Fprintf(c.stdout, "revoked: %s (the replicas that read this register refuse what it publishes through their intake within seconds)\n"+
			"for NATS to refuse it, write the accounts again (askbridge creds nats-config --out FILE) and reload each node (nats-server --signal reload)\n", args[0])
		return exitOK
	}
	fmt.Fprintf(c.stdout, "revoked: %s (a running service drops its connections within seconds)\n", args[0])
	return exitOK
}

// credsImportKeys keeps the signing keys of an operator's own accounts,
// exported from nsc, as the keys askbridge mints credentials with.
func (c *cli) credsImportKeys(dataDir string, args []string) int {
	fs := flag.NewFlagSet("askbridge creds", flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	dir := fs.String("dir", "", "the folder holding the accounts' JWTs and signing keys nsc exported (required)")
	if code, ok := c.parse(fs, args, false); !ok {
		return code
	}
	if *dir == "" || fs.NArg() > 0 {
		return c.usageError("creds", "import-keys takes --dir DIR only")
	}
	imported, err := principal.ImportKeys(dataDir, *dir)
	if err != nil {
		return c.fail("creds import-keys: %v", err)
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ACCOUNT\tPUBLIC KEY\tSIGNS WITH")
	for _, a := range imported {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", a.Name, a.Account, a.SigningKey)
	}
	tw.Flush()
	fmt.Fprintf(c.stdout, "written: %s (mode 0600: it holds the signing keys' seeds)\n", filepath.Join(dataDir, principal.KeysFile))
	return exitOK
}

func (c *cli) credsList(dataDir string, args []string) int {
	if len(args) != 0 {
		return c.usageError("creds", "list takes no arguments")
	}
	reg, err := principal.OpenRegister(dataDir)
	if err != nil {
		return c.fail("%v", err)
	}
	now := time.Now()
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tKIND\tTENANT OR IDENTITY\tACTS FOR\tEXPIRES")
	for _, e := range reg.Entries {
		if !e.Live(now) {
			continue
		}
		who := e.Tenant
		if e.Kind == principal.KindPerson {
			who = e.Name
		}
		expires := "never"
		if !e.Expires.IsZero() {
			expires = e.Expires.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", printable(e.Name, false), e.Kind, printable(cmp.Or(who, "-"), false),
			printable(cmp.Or(e.ActsFor, "-"), false), expires)
	}
	tw.Flush()
	return exitOK
}

// credsNATSConfig writes the accounts a NATS cluster includes to trust the
// credentials this data directory's keys issue.
func (c *cli) credsNATSConfig(dataDir string, args []string) int {
	fs := flag.NewFlagSet("askbridge creds", flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	out := fs.String("out", "", "the nats-server configuration file to write (required)")
	if code, ok := c.parse(fs, args, false); !ok {
		return code
	}
	if *out == "" || fs.NArg() > 0 {
		return c.usageError("creds", "nats-config takes --out FILE only")
	}
	keys, err := principal.LoadOrCreateKeys(dataDir)
	if err != nil {
		return c.fail("%v", err)
	}
	if !keys.OwnOperator() {
		return c.fail("creds nats-config: %v: write its configuration with nsc (nsc generate config --mem-resolver --config-file FILE)", principal.ErrNotOwnOperator)
	}
	reg, err := principal.OpenRegister(dataDir)
	if err != nil {
		return c.fail("%v", err)
	}
	conf, err := keys.ServerConfig(reg.Revocations())
	if err != nil {
		return c.fail("creds nats-config: %v", err)
	}
	if err := os.WriteFile(*out, []byte(conf), 0o644); err != nil {
		return c.fail("creds nats-config: %v", err)
	}
	fmt.Fprintf(c.stdout, "written: %s (include it in every NATS node's configuration; it holds no secret)\n", *out)
	return exitOK
}
