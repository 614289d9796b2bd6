// Package config reads askbridge's environment (prefix ASK_) and checks it
// at start, with one clear line per problem and never a secret in it.
package config

import (
	"errors"
	"fmt"
	"net"
	"os"
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
