// Package config reads askbridge's environment (prefix ASK_) and checks it
// at start, with one clear line per problem and never a secret in it.
package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // ASK_TIME_ZONE's zones, on images without a zoneinfo

	"github.com/kelseyhightower/envconfig"

	"github.com/askbridge/askbridge/bridge"
)

// Config is every ASK_ variable. Secrets are never printed in errors.
//
// Each field's envconfig tag names its variable whole (ASK_ included), and
// its default tag gives the value when the variable is unset (Load).
type Config struct {
	// CLI holds the variables the command-line tools read too: the data
	// directory, NATS's URL, credential and listen address, the people.
	CLI
	HTTPAddr  string `envconfig:"ASK_HTTP_ADDR" default:":8080"`
	PublicURL string `envconfig:"ASK_PUBLIC_URL"`
	// NATSSync is the embedded server's JetStream durability: "always"
	// (the default) fsyncs each write before acknowledging; "interval"
	// once a second. An external server (NATSURL) syncs as its own
	// configuration says: it is empty then, and ignored with a warning
	// (Ignored) when set.
	NATSSync string `envconfig:"ASK_NATS_SYNC"`
	// NATSReplicas, when set (NATSReplicasSet), is the replica count of
	// askbridge's streams on an external cluster; unset, new streams get
	// one and existing ones keep theirs.
	NATSReplicas    int  `envconfig:"ASK_NATS_REPLICAS"`
	NATSReplicasSet bool `ignored:"true"`
	// Store is where the durable record lives: "sqlite" (the default), a
	// database in DataDir that one replica owns, or "jetstream", the
	// bucket ASK_RECORD on the NATS that any number of replicas share
	// (docs/design.md, "The JetStream store").
	Store string `envconfig:"ASK_STORE" default:"sqlite"`

	SlackBotToken      string `envconfig:"ASK_SLACK_BOT_TOKEN"`
	SlackSigningSecret string `envconfig:"ASK_SLACK_SIGNING_SECRET"`
	SlackAppToken      string `envconfig:"ASK_SLACK_APP_TOKEN"`
	SlackAPIURL        string `envconfig:"ASK_SLACK_API_URL" default:"https://slack.com/api/"`
	SlackChannel       string `envconfig:"ASK_SLACK_CHANNEL"`

	DiscordBotToken      string   `envconfig:"ASK_DISCORD_BOT_TOKEN"`
	DiscordPublicKey     string   `envconfig:"ASK_DISCORD_PUBLIC_KEY"`
	DiscordAppID         string   `envconfig:"ASK_DISCORD_APP_ID"`
	DiscordAPIURL        string   `envconfig:"ASK_DISCORD_API_URL" default:"https://discord.com/api/v10/"`
	DiscordChannel       string   `envconfig:"ASK_DISCORD_CHANNEL"`
	DiscordGuild         string   `envconfig:"ASK_DISCORD_GUILD"`
	DiscordAdminRoles    []string `envconfig:"ASK_DISCORD_ADMIN_ROLES"`
	DiscordOperatorRoles []string `envconfig:"ASK_DISCORD_OPERATOR_ROLES"`

	ConsoleSecret string `envconfig:"ASK_CONSOLE_SECRET"`

	Owners    []string `envconfig:"ASK_OWNERS"`
	Admins    []string `envconfig:"ASK_ADMINS"`
	Operators []string `envconfig:"ASK_OPERATORS"`
	Readers   []string `envconfig:"ASK_READERS"`
	// People is CLI.PeopleList (ASK_PEOPLE) parsed.
	People bridge.People `ignored:"true"`

	// Policy is the path of the operator's policy file (docs/contract.md,
	// "The policy file"); empty, no action is gated by policy. The service
	// reads it at start and on SIGHUP (policy.Load).
	Policy string `envconfig:"ASK_POLICY"`

	// MCPToken, when set, switches on the MCP front door at /mcp
	// (streamable HTTP); clients send it as Authorization: Bearer. Never
	// printed.
	MCPToken string `envconfig:"ASK_MCP_TOKEN"`
	// MCPTenant is the tenant MCP clients ask in (docs/mcp.md).
	MCPTenant string `envconfig:"ASK_MCP_TENANT" default:"default"`
	// MCPAutoAllow lists tool uses approve_tool_use allows without
	// asking: Read, Grep, Bash(git status).
	MCPAutoAllow []string `envconfig:"ASK_MCP_AUTO_ALLOW"`
	// MCPProgress is how often a waiting MCP call sends progress.
	MCPProgress time.Duration `envconfig:"ASK_MCP_PROGRESS" default:"15s"`
	// TimeZone is the IANA zone of "tomorrow 09:00" when someone snoozes
	// a question's reminders (docs/contract.md "Delegate and snooze").
	TimeZone string `envconfig:"ASK_TIME_ZONE" default:"UTC"`

	// MetricsTenants and MetricsAgents are the tenants and agents the
	// clarification metrics name as label values on /metrics; the others
	// count as "other" (docs/contract.md, "Clarification metrics").
	// MetricsWindow is how far back those metrics look.
	MetricsTenants []string      `envconfig:"ASK_METRICS_TENANTS"`
	MetricsAgents  []string      `envconfig:"ASK_METRICS_AGENTS"`
	MetricsWindow  time.Duration `envconfig:"ASK_METRICS_WINDOW" default:"168h"`

	LogLevel string `envconfig:"ASK_LOG_LEVEL" default:"info"`
	// ShutdownGrace bounds a graceful stop.
	ShutdownGrace time.Duration `envconfig:"ASK_SHUTDOWN_GRACE" default:"10s"`
}

// Load reads the environment with envconfig and validates it.
//
// Each field's envconfig tag names its variable whole, ASK_ included, and
// Load passes no prefix: with a prefix ("ASK") and short tags, envconfig
// would fall back to the unprefixed name (DATA_DIR), which belongs to
// other programs. split_words is not used for the same reason, and because
// it would split NATSURL and HTTPAddr otherwise than the variables are
// named. Unset, a field takes its default tag; set, even to "", its
// value: lists split on commas (normalize trims them), durations as 10s or
// 2m. No field is required: which settings go together is Validate's.
func Load() (*Config, error) {
	var c Config
	if err := envconfig.Process("", &c); err != nil {
		return nil, parseError(err)
	}
	replicas, _ := os.LookupEnv("ASK_NATS_REPLICAS")
	c.NATSReplicasSet = replicas != ""
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

// Defaults is the configuration with no ASK_ variable set, as Load reads
// it (the default tags), before Validate. Tests and tools that need other
// settings start from it, set fields, and call Validate: the process
// environment is shared by tests running side by side.
func Defaults() Config {
	return Config{
		CLI: cliDefaults(), HTTPAddr: ":8080", Store: StoreSQLite,
		SlackAPIURL: "https://slack.com/api/", DiscordAPIURL: "https://discord.com/api/v10/",
		MCPTenant: "default", MCPProgress: 15 * time.Second, TimeZone: "UTC",
		MetricsWindow: 7 * 24 * time.Hour, LogLevel: "info", ShutdownGrace: 10 * time.Second,
	}
}

// parseError turns envconfig's error for a value that does not parse into
// one line naming the variable and what it takes. The value is never
// echoed (envconfig's own message quotes it): someone may have put a token
// in the wrong variable.
func parseError(err error) error {
	var pe *envconfig.ParseError
	if !errors.As(err, &pe) {
		return fmt.Errorf("config: %w", err)
	}
	return &Error{Problems: []string{fmt.Sprintf("%s must be %s", pe.KeyName, kindWord(pe.TypeName))}}
}

func kindWord(t string) string {
	switch t {
	case "int", "int64":
		return "a whole number"
	case "time.Duration":
		return "a duration such as 10s or 2m"
	case "bool":
		return "true or false"
	}
	return "a valid " + t
}

func (c *Config) normalize() {
	for _, l := range []*[]string{&c.Owners, &c.Admins, &c.Operators, &c.Readers, &c.DiscordAdminRoles, &c.DiscordOperatorRoles, &c.MCPAutoAllow} {
		var out []string
		for _, s := range *l {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
		*l = out
	}
	c.PublicURL = strings.TrimRight(c.PublicURL, "/")
	c.Store = strings.ToLower(strings.TrimSpace(c.Store))
	if c.NATSURL == "" && c.NATSSync == "" {
		c.NATSSync = "always"
	}
}

// Warnings says, one line each, which settings do nothing or cannot work
// as given: warnings rather than refusals, so that a deployment that sets
// them still starts. ASK_NATS_SYNC with ASK_NATS_URL: askbridge cannot make
// another's server fsync, nor rely on the once-a-second sync it gives the
// embedded one in interval mode. ASK_NATS_REPLICAS and ASK_NATS_CREDS
// without it: the embedded server holds one copy and needs no credentials.
// A Discord channel or role given by name: Discord names them by id, so a
// question sent there fails with a typed failure (docs/contract.md, "The outcome"),
// and a role name never matches a member. A chat platform given settings
// but no bot token: it stays off (halfConfigured).
func (c *Config) Warnings() []string {
	var out []string
	if c.NATSURL != "" && c.NATSSync != "" {
		out = append(out, "ASK_NATS_SYNC applies to the embedded NATS only and is ignored: with ASK_NATS_URL, the NATS server's own "+
			"JetStream setting (sync_interval, such as sync_interval: always) decides when it writes to disk; unset ASK_NATS_SYNC")
	}
	if c.NATSURL == "" && c.NATSReplicas > 1 {
		out = append(out, "ASK_NATS_REPLICAS applies to an external NATS cluster (ASK_NATS_URL) only and is ignored: the embedded NATS keeps one copy")
	}
	if c.NATSURL == "" && c.NATSCreds != "" {
		out = append(out, "ASK_NATS_CREDS applies to an external NATS (ASK_NATS_URL) only and is ignored")
	}
	if c.DiscordChannel != "" && !bridge.ValidSnowflake(c.DiscordChannel) {
		out = append(out, fmt.Sprintf("ASK_DISCORD_CHANNEL should be a channel id, a number such as 1234567890123456789, not %q: questions sent there will fail", c.DiscordChannel))
	}
	for _, l := range []struct {
		name string
		ids  []string
	}{{"ASK_DISCORD_ADMIN_ROLES", c.DiscordAdminRoles}, {"ASK_DISCORD_OPERATOR_ROLES", c.DiscordOperatorRoles}} {
		for _, id := range l.ids {
			if !bridge.ValidSnowflake(id) {
				out = append(out, fmt.Sprintf("%s: %q should be a role id, a number such as 1234567890123456789 (not the role's name): it will match nobody", l.name, id))
			}
		}
	}
	return append(out, c.halfConfigured()...)
}

// halfConfigured warns of a chat platform given some of its settings but
// not the bot token that switches it on: it stays off, and the warning
// names what is set and what is missing. (A Slack signing secret or app
// token without the bot token is refused instead, by Validate.)
func (c *Config) halfConfigured() []string {
	var out []string
	if !c.SlackEnabled() && c.SlackChannel != "" {
		out = append(out, "Slack is off: ASK_SLACK_CHANNEL is set, but not ASK_SLACK_BOT_TOKEN with ASK_SLACK_SIGNING_SECRET "+
			"(or ASK_SLACK_APP_TOKEN for Socket Mode); set them to switch Slack on (docs/slack.md)")
	}
	if c.DiscordEnabled() {
		return out
	}
	var set []string
	for _, v := range []struct {
		name string
		on   bool
	}{
		{"ASK_DISCORD_PUBLIC_KEY", c.DiscordPublicKey != ""}, {"ASK_DISCORD_APP_ID", c.DiscordAppID != ""},
		{"ASK_DISCORD_CHANNEL", c.DiscordChannel != ""}, {"ASK_DISCORD_GUILD", c.DiscordGuild != ""},
		{"ASK_DISCORD_ADMIN_ROLES", len(c.DiscordAdminRoles) > 0}, {"ASK_DISCORD_OPERATOR_ROLES", len(c.DiscordOperatorRoles) > 0},
	} {
		if v.on {
			set = append(set, v.name)
		}
	}
	if len(set) == 0 {
		return out
	}
	missing := []string{"ASK_DISCORD_BOT_TOKEN"}
	if c.DiscordPublicKey == "" {
		missing = append(missing, "ASK_DISCORD_PUBLIC_KEY")
	}
	if c.DiscordAppID == "" {
		missing = append(missing, "ASK_DISCORD_APP_ID")
	}
	verb, them := " is", "it"
	if len(set) > 1 {
		verb = " are"
	}
	if len(missing) > 1 {
		them = "them"
	}
	return append(out, "Discord is off: "+inWords(set)+verb+" set, but not "+inWords(missing)+"; set "+them+" to switch Discord on (docs/discord.md)")
}

// inWords lists names as a person would: a, b and c.
func inWords(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// Validate tidies c (lists trimmed of blanks, ASK_PUBLIC_URL without its
// trailing /, ASK_STORE in lower case, ASK_NATS_SYNC's default), parses
// ASK_PEOPLE into People, and returns one line per problem, each naming
// the variable.
func (c *Config) Validate() error {
	c.normalize()
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }

	if strings.TrimSpace(c.DataDir) == "" {
		bad("ASK_DATA_DIR must not be empty")
	}
	if !validHostPort(c.HTTPAddr) {
		bad("ASK_HTTP_ADDR must be host:port with a port from 0 to 65535 (such as :8080), not %q", c.HTTPAddr)
	}
	if c.NATSURL == "" {
		if !validHostPort(c.NATSListen) {
			bad("ASK_NATS_LISTEN must be host:port with a port from 0 to 65535 (such as 127.0.0.1:4222), not %q", c.NATSListen)
		}
	} else if !validNATSURLs(c.NATSURL) {
		// Not echoed: the URL may carry a user and password.
		bad("ASK_NATS_URL must be a URL such as nats://host:4222, or several separated by commas")
	}
	switch {
	case c.NATSURL != "" && c.NATSSync == "":
	case c.NATSSync != "always" && c.NATSSync != "interval":
		bad("ASK_NATS_SYNC must be always or interval, not %q", c.NATSSync)
	}
	if (c.NATSReplicasSet || c.NATSReplicas != 0) && (c.NATSReplicas < 1 || c.NATSReplicas > 5) {
		bad("ASK_NATS_REPLICAS must be 1 to 5")
	}
	if c.Store != StoreSQLite && c.Store != StoreJetStream {
		bad("ASK_STORE must be %s or %s, not %q", StoreSQLite, StoreJetStream, c.Store)
	}
	if c.PublicURL != "" {
		if u, err := url.Parse(c.PublicURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("ASK_PUBLIC_URL must be an http or https URL such as https://askbridge.example.com")
		} else if u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(c.PublicURL, "#") {
			// Links are the base followed by /console/...?as=...: a query or
			// fragment here would swallow their path, a user name travel in
			// every link.
			bad("ASK_PUBLIC_URL must be a base such as https://example.com/askbridge, without a user name, ? query or # fragment")
		} else if p := u.Port(); p != "" {
			if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
				bad("ASK_PUBLIC_URL has port %s; a port is 1 to 65535", p)
			}
		}
	}
	if c.SlackBotToken != "" && c.SlackSigningSecret == "" && c.SlackAppToken == "" {
		bad("ASK_SLACK_SIGNING_SECRET is required when ASK_SLACK_BOT_TOKEN is set")
	}
	if (c.SlackSigningSecret != "" || c.SlackAppToken != "") && c.SlackBotToken == "" {
		bad("ASK_SLACK_BOT_TOKEN is required when ASK_SLACK_SIGNING_SECRET or ASK_SLACK_APP_TOKEN is set")
	}
	if c.SlackAppToken != "" && !strings.HasPrefix(c.SlackAppToken, "xapp-") {
		bad("ASK_SLACK_APP_TOKEN must be an app-level token starting with xapp-")
	}
	if c.SlackBotToken != "" && !strings.HasSuffix(c.SlackAPIURL, "/") {
		bad("ASK_SLACK_API_URL must end with / (such as https://slack.com/api/)")
	} else if c.SlackBotToken != "" && !isHTTPURL(c.SlackAPIURL) {
		bad("ASK_SLACK_API_URL must be an http or https URL such as https://slack.com/api/")
	}
	// The Slack adapter sends only to channel ids, and refuses to start
	// with another default: say so here, as for any bad setting.
	if c.SlackChannel != "" && !bridge.ValidSlackID(c.SlackChannel) {
		bad("ASK_SLACK_CHANNEL must be a channel id such as C0123 (not its name), not %q", c.SlackChannel)
	}
	if c.DiscordBotToken != "" {
		if c.DiscordPublicKey == "" {
			bad("ASK_DISCORD_PUBLIC_KEY is required when ASK_DISCORD_BOT_TOKEN is set")
		}
		if c.DiscordAppID == "" {
			bad("ASK_DISCORD_APP_ID is required when ASK_DISCORD_BOT_TOKEN is set")
		}
		if !strings.HasSuffix(c.DiscordAPIURL, "/") {
			bad("ASK_DISCORD_API_URL must end with / (such as https://discord.com/api/v10/)")
		} else if !isHTTPURL(c.DiscordAPIURL) {
			bad("ASK_DISCORD_API_URL must be an http or https URL such as https://discord.com/api/v10/")
		}
	}
	if c.DiscordPublicKey != "" && !isHexKey(c.DiscordPublicKey) {
		bad("ASK_DISCORD_PUBLIC_KEY must be the application's public key: 64 hexadecimal characters")
	}
	if c.ConsoleSecret != "" && len(c.ConsoleSecret) < 16 {
		bad("ASK_CONSOLE_SECRET must be at least 16 characters")
	}
	for _, l := range []struct {
		name string
		ids  []string
	}{{"ASK_OWNERS", c.Owners}, {"ASK_ADMINS", c.Admins}, {"ASK_OPERATORS", c.Operators}, {"ASK_READERS", c.Readers}} {
		for _, id := range l.ids {
			// An entry may be scoped to one tenant: acme/slack:U0123.
			if tenant, scoped, ok := strings.Cut(id, "/"); ok {
				if !bridge.ValidToken(tenant) {
					bad("%s: %q: the tenant before / must be 1 to 64 letters, digits, '-' or '_'", l.name, id)
					continue
				}
				id = scoped
			}
			if err := bridge.CheckIdentity(id); err != nil {
				bad("%s: %s", l.name, err)
			}
		}
	}
	if people, err := bridge.ParsePeople(c.PeopleList); err != nil {
		bad("ASK_PEOPLE: %s", err)
	} else {
		c.People = people
	}
	if c.Policy != "" && strings.TrimSpace(c.Policy) == "" {
		bad("ASK_POLICY must be the path of a policy file, or unset for none")
	}
	if _, err := c.Location(); err != nil {
		bad("ASK_TIME_ZONE must be an IANA time zone such as UTC or Europe/Paris, not %q", c.TimeZone)
	}
	switch strings.ToLower(c.LogLevel) {
	case "debug", "info", "warn", "error":
	default:
		bad("ASK_LOG_LEVEL must be debug, info, warn or error")
	}
	if !bridge.ValidToken(c.MCPTenant) {
		bad("ASK_MCP_TENANT must be 1 to 64 letters, digits, '-' or '_', not %q", c.MCPTenant)
	}
	if c.MCPProgress <= 0 {
		bad("ASK_MCP_PROGRESS must be a positive duration such as 15s")
	}
	if c.MCPToken != "" && len(c.MCPToken) < 16 {
		bad("ASK_MCP_TOKEN must be at least 16 characters")
	}
	for _, t := range c.MetricsTenants {
		if !bridge.ValidToken(t) {
			bad("ASK_METRICS_TENANTS: %q must be 1 to 64 letters, digits, '-' or '_'", t)
		}
	}
	if len(c.MetricsTenants) > maxMetricsLabels || len(c.MetricsAgents) > maxMetricsLabels {
		bad("ASK_METRICS_TENANTS and ASK_METRICS_AGENTS name at most %d values each: every one adds series to /metrics", maxMetricsLabels)
	}
	if c.MetricsWindow <= 0 {
		bad("ASK_METRICS_WINDOW must be a positive duration such as 168h")
	}
	if c.ShutdownGrace < 0 {
		bad("ASK_SHUTDOWN_GRACE must not be negative")
	}
	if len(problems) > 0 {
		return &Error{Problems: problems}
	}
	return nil
}

// The stores ASK_STORE names.
const (
	StoreSQLite    = "sqlite"
	StoreJetStream = "jetstream"
)

// Shared reports whether the record is shared by replicas (ASK_STORE=
// jetstream) rather than owned by this one's data directory.
func (c *Config) Shared() bool { return c.Store == StoreJetStream }

// Location is ASK_TIME_ZONE's zone. "Local" is refused: the machine's
// zone is no setting a reader of the configuration can see.
func (c *Config) Location() (*time.Location, error) {
	if c.TimeZone == "" || strings.EqualFold(c.TimeZone, "local") {
		return nil, fmt.Errorf("config: no time zone %q", c.TimeZone)
	}
	return time.LoadLocation(c.TimeZone)
}

// maxMetricsLabels bounds ASK_METRICS_TENANTS and ASK_METRICS_AGENTS.
const maxMetricsLabels = 100

// Error lists configuration problems, one line each.
type Error struct{ Problems []string }

func (e *Error) Error() string { return strings.Join(e.Problems, "\n") }

// validNATSURLs checks NATS's URL list: one or more URLs, comma-separated.
func validNATSURLs(s string) bool {
	for _, one := range strings.Split(s, ",") {
		u, err := url.Parse(strings.TrimSpace(one))
		if err != nil || u.Scheme == "" || u.Host == "" {
			return false
		}
	}
	return true
}

// isHTTPURL reports whether s is an absolute http or https URL.
func isHTTPURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

func isHexKey(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, r := range s {
		if !strings.ContainsRune("0123456789abcdefABCDEF", r) {
			return false
		}
	}
	return true
}

// SlackEnabled reports whether Slack credentials are set.
func (c *Config) SlackEnabled() bool { return c.SlackBotToken != "" }

// DiscordEnabled reports whether Discord credentials are set.
func (c *Config) DiscordEnabled() bool { return c.DiscordBotToken != "" }

// BaseURL is PublicURL, or a loopback URL derived from HTTPAddr.
func (c *Config) BaseURL() string {
	if c.PublicURL != "" {
		return c.PublicURL
	}
	host, port, err := net.SplitHostPort(c.HTTPAddr)
	if err != nil {
		return "http://127.0.0.1:8080"
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// validHostPort reports whether addr is host:port with a numeric port, as
// the listeners need (a service name such as :http is not taken).
func validHostPort(addr string) bool {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	n, err := strconv.Atoi(port)
	return err == nil && n >= 0 && n <= 65535 && port[0] != '+'
}
