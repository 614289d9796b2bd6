package config

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
)

// clearEnv unsets every ASK_ variable for this test (restored afterwards).
func clearEnv(t *testing.T) {
	t.Helper()
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "ASK_") {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
	}
}

func setEnv(t *testing.T, env map[string]string) {
	t.Helper()
	for k, v := range env {
		t.Setenv(k, v)
	}
}

func TestDefaults(t *testing.T) {
	clearEnv(t)
	c, err := Load()
	if err != nil {
		t.Fatalf("Load with no environment: %v", err)
	}
	want := Config{
		CLI: CLI{DataDir: "./data", NATSListen: "127.0.0.1:4222"}, HTTPAddr: ":8080", NATSSync: "always", // NATSReplicas unset: existing streams keep theirs
		SlackAPIURL: "https://slack.com/api/", DiscordAPIURL: "https://discord.com/api/v10/",
		LogLevel: "info", ShutdownGrace: 10 * time.Second,
		MCPTenant: "default", MCPProgress: 15 * time.Second, TimeZone: "UTC",
		MetricsWindow: 7 * 24 * time.Hour, Store: StoreSQLite,
	}
	if !reflect.DeepEqual(*c, want) {
		t.Errorf("defaults = %+v\nwant       %+v", *c, want)
	}
	d := Defaults()
	if err := d.Validate(); err != nil || !reflect.DeepEqual(d, want) {
		t.Errorf("Defaults() validated = %+v, %v\nwant                   %+v", d, err, want)
	}
	if c.SlackEnabled() || c.DiscordEnabled() {
		t.Error("Slack or Discord enabled without credentials")
	}
	if got := c.BaseURL(); got != "http://127.0.0.1:8080" {
		t.Errorf("BaseURL = %q", got)
	}
}

// Unprefixed variables belong to other programs and must not be read.
func TestUnprefixedVariablesAreIgnored(t *testing.T) {
	clearEnv(t)
	setEnv(t, map[string]string{"DATA_DIR": "/elsewhere", "LOG_LEVEL": "trace", "HTTP_ADDR": "nonsense", "SLACK_BOT_TOKEN": "xoxb-other"})
	c, err := Load()
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if c.DataDir != "./data" || c.LogLevel != "info" || c.HTTPAddr != ":8080" || c.SlackBotToken != "" {
		t.Errorf("read unprefixed variables: %+v", c)
	}
}

func TestLoadReadsEnvironment(t *testing.T) {
	clearEnv(t)
	setEnv(t, map[string]string{
		"ASK_DATA_DIR":             "/var/lib/askbridge",
		"ASK_HTTP_ADDR":            "0.0.0.0:9090",
		"ASK_PUBLIC_URL":           "https://ask.example.com/",
		"ASK_NATS_URL":             "nats://n1:4222, nats://n2:4222",
		"ASK_NATS_REPLICAS":        "3",
		"ASK_SLACK_BOT_TOKEN":      "xoxb-1",
		"ASK_SLACK_SIGNING_SECRET": "s",
		"ASK_DISCORD_BOT_TOKEN":    "d",
		"ASK_DISCORD_PUBLIC_KEY":   strings.Repeat("aB", 32),
		"ASK_DISCORD_APP_ID":       "123",
		"ASK_DISCORD_ADMIN_ROLES":  "111, 222",
		"ASK_OWNERS":               "slack:U0123,discord:4567,cli:alice",
		"ASK_ADMINS":               " slack:U1 , ,console:ana@example.com ",
		"ASK_OPERATORS":            "",
		"ASK_READERS":              "cli:bob",
		"ASK_LOG_LEVEL":            "DEBUG",
		"ASK_SHUTDOWN_GRACE":       "1m",
		"ASK_POLICY":               "/etc/askbridge/policy.yaml",
		"ASK_PEOPLE":               "kevin=slack:U0KEV|discord:333333333333333333|console:kevin,ana=slack:U0ANA",
	})
	c, err := Load()
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"DataDir", c.DataDir, "/var/lib/askbridge"},
		{"PublicURL", c.PublicURL, "https://ask.example.com"},
		{"BaseURL", c.BaseURL(), "https://ask.example.com"},
		{"NATSReplicas", c.NATSReplicas, 3},
		{"Owners", c.Owners, []string{"slack:U0123", "discord:4567", "cli:alice"}},
		{"Admins", c.Admins, []string{"slack:U1", "console:ana@example.com"}},
		{"Operators", c.Operators, []string(nil)},
		{"Readers", c.Readers, []string{"cli:bob"}},
		{"DiscordAdminRoles", c.DiscordAdminRoles, []string{"111", "222"}},
		{"ShutdownGrace", c.ShutdownGrace, time.Minute},
		{"Policy", c.Policy, "/etc/askbridge/policy.yaml"},
		{"People", c.People, bridge.People{"kevin": {"slack:U0KEV", "discord:333333333333333333", "console:kevin"}, "ana": {"slack:U0ANA"}}},
		{"SlackEnabled", c.SlackEnabled(), true},
		{"DiscordEnabled", c.DiscordEnabled(), true},
	}
	for _, ch := range checks {
		if !reflect.DeepEqual(ch.got, ch.want) {
			t.Errorf("%s = %#v, want %#v", ch.name, ch.got, ch.want)
		}
	}
}

// TestDefaultsValidate checks the configuration tests and tools build
// from Defaults is the one Load reads with no variable set, and that
// Validate tidies one built by hand as Load tidies the environment's.
func TestDefaultsValidate(t *testing.T) {
	t.Parallel()
	c := Defaults()
	c.Operators = []string{" cli:kevin", "", "cli:ana "}
	c.PublicURL = "https://ask.example.com/"
	c.Store = "JetStream"
	c.PeopleList = "ana=slack:U0ANA|cli:ana"
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if !reflect.DeepEqual(c.Operators, []string{"cli:kevin", "cli:ana"}) || c.PublicURL != "https://ask.example.com" ||
		c.Store != StoreJetStream || c.NATSSync != "always" || !reflect.DeepEqual(c.People, bridge.People{"ana": {"slack:U0ANA", "cli:ana"}}) {
		t.Errorf("Validate left %+v", c)
	}
	c = Defaults()
	c.NATSURL, c.NATSReplicas, c.NATSReplicasSet = "nats://n1:4222", 0, true
	if err := c.Validate(); err == nil || err.Error() != "ASK_NATS_REPLICAS must be 1 to 5" {
		t.Errorf("Validate of replicas set to 0: %v", err)
	}
	if c.NATSSync != "" {
		t.Errorf("NATSSync = %q with an external NATS, want it left to the server", c.NATSSync)
	}
}

func TestBaseURL(t *testing.T) {
	for addr, want := range map[string]string{
		":8080": "http://127.0.0.1:8080", "0.0.0.0:80": "http://127.0.0.1:80", "[::]:8080": "http://127.0.0.1:8080",
		"10.0.0.5:8080": "http://10.0.0.5:8080", "[::1]:8080": "http://[::1]:8080", "bad": "http://127.0.0.1:8080",
	} {
		if got := (&Config{HTTPAddr: addr}).BaseURL(); got != want {
			t.Errorf("BaseURL(%q) = %q, want %q", addr, got, want)
		}
	}
}

// Secret values used below; none may appear in any error.
const (
	slackToken  = "xoxb-Sekr3t-slack-bot-token"
	slackSecret = "Sekr3t-signing-secret"
	appToken    = "Sekr3t-app-token"
	discordTok  = "Sekr3t-discord-bot-token"
	consoleSec  = "Sekr3t"
	natsURL     = "nats:/user:Sekr3t-nats-password@"
)

func TestValidationMessages(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want []string // exactly these problems; none means valid
	}{
		{name: "Slack bot token without signing secret", env: map[string]string{"ASK_SLACK_BOT_TOKEN": slackToken},
			want: []string{"ASK_SLACK_SIGNING_SECRET is required when ASK_SLACK_BOT_TOKEN is set"}},
		{name: "Slack socket mode needs no signing secret", env: map[string]string{"ASK_SLACK_BOT_TOKEN": slackToken, "ASK_SLACK_APP_TOKEN": "xapp-Sekr3t"}},
		{name: "Slack signing secret without bot token", env: map[string]string{"ASK_SLACK_SIGNING_SECRET": slackSecret},
			want: []string{"ASK_SLACK_BOT_TOKEN is required when ASK_SLACK_SIGNING_SECRET or ASK_SLACK_APP_TOKEN is set"}},
		{name: "Slack app token of the wrong kind", env: map[string]string{"ASK_SLACK_BOT_TOKEN": slackToken, "ASK_SLACK_SIGNING_SECRET": slackSecret, "ASK_SLACK_APP_TOKEN": appToken},
			want: []string{"ASK_SLACK_APP_TOKEN must be an app-level token starting with xapp-"}},
		{name: "Slack API URL without slash", env: map[string]string{"ASK_SLACK_BOT_TOKEN": slackToken, "ASK_SLACK_SIGNING_SECRET": slackSecret, "ASK_SLACK_API_URL": "https://slack.example.gov/api"},
			want: []string{"ASK_SLACK_API_URL must end with / (such as https://slack.com/api/)"}},
		{name: "Discord token alone", env: map[string]string{"ASK_DISCORD_BOT_TOKEN": discordTok},
			want: []string{"ASK_DISCORD_PUBLIC_KEY is required when ASK_DISCORD_BOT_TOKEN is set", "ASK_DISCORD_APP_ID is required when ASK_DISCORD_BOT_TOKEN is set"}},
		{name: "Discord API URL without slash", env: map[string]string{"ASK_DISCORD_BOT_TOKEN": discordTok, "ASK_DISCORD_PUBLIC_KEY": strings.Repeat("0", 64), "ASK_DISCORD_APP_ID": "1", "ASK_DISCORD_API_URL": "https://discord.com/api/v10"},
			want: []string{"ASK_DISCORD_API_URL must end with / (such as https://discord.com/api/v10/)"}},
		{name: "Slack API URL not a URL", env: map[string]string{"ASK_SLACK_BOT_TOKEN": slackToken, "ASK_SLACK_SIGNING_SECRET": slackSecret, "ASK_SLACK_API_URL": "slack.example.gov/api/"},
			want: []string{"ASK_SLACK_API_URL must be an http or https URL such as https://slack.com/api/"}},
		{name: "Discord API URL not a URL", env: map[string]string{"ASK_DISCORD_BOT_TOKEN": discordTok, "ASK_DISCORD_PUBLIC_KEY": strings.Repeat("0", 64), "ASK_DISCORD_APP_ID": "1", "ASK_DISCORD_API_URL": "discord.com/api/v10/"},
			want: []string{"ASK_DISCORD_API_URL must be an http or https URL such as https://discord.com/api/v10/"}},
		{name: "Slack channel by name", env: map[string]string{"ASK_SLACK_CHANNEL": "#general"},
			want: []string{`ASK_SLACK_CHANNEL must be a channel id such as C0123 (not its name), not "#general"`}},
		// Warnings, not refusals (see TestWarnings).
		{name: "Slack channel id", env: map[string]string{"ASK_SLACK_CHANNEL": "C0123ABC"}},
		{name: "Discord ids that are names", env: map[string]string{"ASK_DISCORD_CHANNEL": "general",
			"ASK_DISCORD_ADMIN_ROLES": "123,Admins", "ASK_DISCORD_OPERATOR_ROLES": "ops"}},
		{name: "Discord ids", env: map[string]string{"ASK_DISCORD_CHANNEL": "1234567890123456789", "ASK_DISCORD_GUILD": "42", "ASK_DISCORD_ADMIN_ROLES": "1, 2"}},
		{name: "Discord public key not hex", env: map[string]string{"ASK_DISCORD_PUBLIC_KEY": strings.Repeat("g", 64)},
			want: []string{"ASK_DISCORD_PUBLIC_KEY must be the application's public key: 64 hexadecimal characters"}},
		{name: "Discord public key short", env: map[string]string{"ASK_DISCORD_PUBLIC_KEY": strings.Repeat("a", 63)},
			want: []string{"ASK_DISCORD_PUBLIC_KEY must be the application's public key: 64 hexadecimal characters"}},
		{name: "console secret short", env: map[string]string{"ASK_CONSOLE_SECRET": consoleSec},
			want: []string{"ASK_CONSOLE_SECRET must be at least 16 characters"}},
		{name: "console secret of 16", env: map[string]string{"ASK_CONSOLE_SECRET": strings.Repeat("s", 16)}},
		{name: "store jetstream", env: map[string]string{"ASK_STORE": "JetStream"}},
		{name: "store sqlite", env: map[string]string{"ASK_STORE": "sqlite"}},
		{name: "store unknown", env: map[string]string{"ASK_STORE": "postgres"},
			want: []string{`ASK_STORE must be sqlite or jetstream, not "postgres"`}},
		{name: "empty data dir", env: map[string]string{"ASK_DATA_DIR": " "}, want: []string{"ASK_DATA_DIR must not be empty"}},
		{name: "HTTP address without port", env: map[string]string{"ASK_HTTP_ADDR": "8080"},
			want: []string{`ASK_HTTP_ADDR must be host:port with a port from 0 to 65535 (such as :8080), not "8080"`}},
		{name: "HTTP port not a number", env: map[string]string{"ASK_HTTP_ADDR": ":abc"},
			want: []string{`ASK_HTTP_ADDR must be host:port with a port from 0 to 65535 (such as :8080), not ":abc"`}},
		{name: "HTTP port too large", env: map[string]string{"ASK_HTTP_ADDR": "127.0.0.1:65536"},
			want: []string{`ASK_HTTP_ADDR must be host:port with a port from 0 to 65535 (such as :8080), not "127.0.0.1:65536"`}},
		{name: "HTTP port 0", env: map[string]string{"ASK_HTTP_ADDR": "127.0.0.1:0"}},
		{name: "NATS listen without port", env: map[string]string{"ASK_NATS_LISTEN": "localhost"},
			want: []string{`ASK_NATS_LISTEN must be host:port with a port from 0 to 65535 (such as 127.0.0.1:4222), not "localhost"`}},
		{name: "NATS listen port too large", env: map[string]string{"ASK_NATS_LISTEN": "127.0.0.1:99999"},
			want: []string{`ASK_NATS_LISTEN must be host:port with a port from 0 to 65535 (such as 127.0.0.1:4222), not "127.0.0.1:99999"`}},
		{name: "NATS listen ignored with a URL", env: map[string]string{"ASK_NATS_LISTEN": "localhost", "ASK_NATS_URL": "nats://n1:4222"}},
		{name: "NATS URL with a password is not echoed", env: map[string]string{"ASK_NATS_URL": natsURL},
			want: []string{"ASK_NATS_URL must be a URL such as nats://host:4222, or several separated by commas"}},
		{name: "NATS URL without scheme", env: map[string]string{"ASK_NATS_URL": "n1:4222"},
			want: []string{"ASK_NATS_URL must be a URL such as nats://host:4222, or several separated by commas"}},
		{name: "NATS URL list with a bad entry", env: map[string]string{"ASK_NATS_URL": "nats://n1:4222,n2"},
			want: []string{"ASK_NATS_URL must be a URL such as nats://host:4222, or several separated by commas"}},
		{name: "NATS URL with credentials", env: map[string]string{"ASK_NATS_URL": "tls://user:Sekr3t@n1:4222"}},
		{name: "NATS sync unknown", env: map[string]string{"ASK_NATS_SYNC": "never"},
			want: []string{`ASK_NATS_SYNC must be always or interval, not "never"`}},
		{name: "NATS sync interval", env: map[string]string{"ASK_NATS_SYNC": "interval"}},
		{name: "NATS sync with an external server", env: map[string]string{"ASK_NATS_URL": "nats://n1:4222", "ASK_NATS_SYNC": "interval"}},
		{name: "NATS sync always with an external server", env: map[string]string{"ASK_NATS_URL": "nats://n1:4222", "ASK_NATS_SYNC": "always"}},
		{name: "NATS sync unknown with an external server", env: map[string]string{"ASK_NATS_URL": "nats://n1:4222", "ASK_NATS_SYNC": "never"},
			want: []string{`ASK_NATS_SYNC must be always or interval, not "never"`}},
		{name: "NATS replicas 0", env: map[string]string{"ASK_NATS_REPLICAS": "0"}, want: []string{"ASK_NATS_REPLICAS must be 1 to 5"}},
		{name: "NATS replicas 6", env: map[string]string{"ASK_NATS_REPLICAS": "6"}, want: []string{"ASK_NATS_REPLICAS must be 1 to 5"}},
		{name: "public URL without scheme", env: map[string]string{"ASK_PUBLIC_URL": "ask.example.com"},
			want: []string{"ASK_PUBLIC_URL must be an http or https URL such as https://askbridge.example.com"}},
		{name: "public URL ftp", env: map[string]string{"ASK_PUBLIC_URL": "ftp://ask.example.com"},
			want: []string{"ASK_PUBLIC_URL must be an http or https URL such as https://askbridge.example.com"}},
		{name: "public URL with a query", env: map[string]string{"ASK_PUBLIC_URL": "https://ask.example.com/?tenant=acme"},
			want: []string{"ASK_PUBLIC_URL must be a base such as https://example.com/askbridge, without a user name, ? query or # fragment"}},
		{name: "public URL with an empty query", env: map[string]string{"ASK_PUBLIC_URL": "https://ask.example.com/askbridge?"},
			want: []string{"ASK_PUBLIC_URL must be a base such as https://example.com/askbridge, without a user name, ? query or # fragment"}},
		{name: "public URL with port 99999", env: map[string]string{"ASK_PUBLIC_URL": "https://ask.example.com:99999"},
			want: []string{"ASK_PUBLIC_URL has port 99999; a port is 1 to 65535"}},
		{name: "public URL with port 0", env: map[string]string{"ASK_PUBLIC_URL": "http://127.0.0.1:0/askbridge"},
			want: []string{"ASK_PUBLIC_URL has port 0; a port is 1 to 65535"}},
		{name: "public URL with a fragment", env: map[string]string{"ASK_PUBLIC_URL": "https://ask.example.com/#"},
			want: []string{"ASK_PUBLIC_URL must be a base such as https://example.com/askbridge, without a user name, ? query or # fragment"}},
		{name: "public URL with a password is not echoed", env: map[string]string{"ASK_PUBLIC_URL": "https://bob:Sekr3t@ask.example.com"},
			want: []string{"ASK_PUBLIC_URL must be a base such as https://example.com/askbridge, without a user name, ? query or # fragment"}},
		{name: "public URL under a path", env: map[string]string{"ASK_PUBLIC_URL": "https://example.com/askbridge/"}},
		{name: "identity without platform", env: map[string]string{"ASK_OWNERS": "slack:U1,alice"},
			want: []string{`ASK_OWNERS: "alice" must be slack:<user>, discord:<user>, console:<user> or cli:<user>`}},
		{name: "identity in each list", env: map[string]string{"ASK_ADMINS": "x", "ASK_OPERATORS": "y", "ASK_READERS": "z"},
			want: []string{
				`ASK_ADMINS: "x" must be slack:<user>, discord:<user>, console:<user> or cli:<user>`,
				`ASK_OPERATORS: "y" must be slack:<user>, discord:<user>, console:<user> or cli:<user>`,
				`ASK_READERS: "z" must be slack:<user>, discord:<user>, console:<user> or cli:<user>`,
			}},
		{name: "tenant-scoped identities", env: map[string]string{"ASK_OPERATORS": "acme/slack:U1,slack:U2", "ASK_ADMINS": "acme-2/cli:bob"}},
		{name: "tenant-scoped identity with a bad tenant", env: map[string]string{"ASK_OPERATORS": "ac me/slack:U1"},
			want: []string{`ASK_OPERATORS: "ac me/slack:U1": the tenant before / must be 1 to 64 letters, digits, '-' or '_'`}},
		{name: "tenant-scoped identity with a bad identity", env: map[string]string{"ASK_OPERATORS": "acme/alice"},
			want: []string{`ASK_OPERATORS: "alice" must be slack:<user>, discord:<user>, console:<user> or cli:<user>`}},
		{name: "log level unknown", env: map[string]string{"ASK_LOG_LEVEL": "trace"}, want: []string{"ASK_LOG_LEVEL must be debug, info, warn or error"}},
		{name: "time zone unknown", env: map[string]string{"ASK_TIME_ZONE": "Mars/Olympus"},
			want: []string{`ASK_TIME_ZONE must be an IANA time zone such as UTC or Europe/Paris, not "Mars/Olympus"`}},
		{name: "time zone local", env: map[string]string{"ASK_TIME_ZONE": "Local"},
			want: []string{`ASK_TIME_ZONE must be an IANA time zone such as UTC or Europe/Paris, not "Local"`}},
		{name: "people without identities", env: map[string]string{"ASK_PEOPLE": "kevin"},
			want: []string{`ASK_PEOPLE: "kevin" must be name=identity|identity, such as kevin=slack:U0KEV|discord:333333333333333333`}},
		{name: "people sharing an identity", env: map[string]string{"ASK_PEOPLE": "kevin=slack:U0KEV,kev=slack:U0KEV|cli:kev"},
			want: []string{`ASK_PEOPLE: slack:U0KEV is linked to both kev and kevin; an identity belongs to one person`}},
		{name: "people with a bad identity", env: map[string]string{"ASK_PEOPLE": "kevin=U0KEV"},
			want: []string{`ASK_PEOPLE: kevin: "U0KEV" must be slack:<user>, discord:<user>, console:<user> or cli:<user>`}},
		{name: "policy only blanks", env: map[string]string{"ASK_POLICY": "  "}, want: []string{"ASK_POLICY must be the path of a policy file, or unset for none"}},
		{name: "mcp token short", env: map[string]string{"ASK_MCP_TOKEN": "Sekr3t"}, want: []string{"ASK_MCP_TOKEN must be at least 16 characters"}},
		{name: "mcp tenant bad", env: map[string]string{"ASK_MCP_TENANT": "acme corp"},
			want: []string{`ASK_MCP_TENANT must be 1 to 64 letters, digits, '-' or '_', not "acme corp"`}},
		{name: "mcp progress zero", env: map[string]string{"ASK_MCP_PROGRESS": "0s"}, want: []string{"ASK_MCP_PROGRESS must be a positive duration such as 15s"}},
		{name: "metrics tenant not a token", env: map[string]string{"ASK_METRICS_TENANTS": "acme,bad tenant"},
			want: []string{`ASK_METRICS_TENANTS: "bad tenant" must be 1 to 64 letters, digits, '-' or '_'`}},
		{name: "metrics window zero", env: map[string]string{"ASK_METRICS_WINDOW": "0s"}, want: []string{"ASK_METRICS_WINDOW must be a positive duration such as 168h"}},
		{name: "negative shutdown grace", env: map[string]string{"ASK_SHUTDOWN_GRACE": "-1s"}, want: []string{"ASK_SHUTDOWN_GRACE must not be negative"}},
		{name: "every secret wrong at once", env: map[string]string{
			"ASK_SLACK_SIGNING_SECRET": slackSecret, "ASK_SLACK_APP_TOKEN": appToken,
			"ASK_DISCORD_BOT_TOKEN": discordTok, "ASK_DISCORD_PUBLIC_KEY": "Sekr3t-key", "ASK_CONSOLE_SECRET": consoleSec,
		}, want: []string{
			"ASK_SLACK_BOT_TOKEN is required when ASK_SLACK_SIGNING_SECRET or ASK_SLACK_APP_TOKEN is set",
			"ASK_SLACK_APP_TOKEN must be an app-level token starting with xapp-",
			"ASK_DISCORD_APP_ID is required when ASK_DISCORD_BOT_TOKEN is set",
			"ASK_DISCORD_PUBLIC_KEY must be the application's public key: 64 hexadecimal characters",
			"ASK_CONSOLE_SECRET must be at least 16 characters",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			setEnv(t, tt.env)
			c, err := Load()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("Load: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Load accepted %+v, want %q", c, tt.want)
			}
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("error is %T, want *config.Error", err)
			}
			if !reflect.DeepEqual(ce.Problems, tt.want) {
				t.Errorf("problems = %q\nwant       %q", ce.Problems, tt.want)
			}
			if err.Error() != strings.Join(tt.want, "\n") {
				t.Errorf("Error() = %q, want one line per problem", err.Error())
			}
			assertNoSecret(t, err)
		})
	}
}

func assertNoSecret(t *testing.T, err error) {
	t.Helper()
	if strings.Contains(err.Error(), "Sekr3t") {
		t.Errorf("error shows a secret: %q", err)
	}
}

// A value that does not parse is named by its variable, never echoed:
// someone may have put a token in the wrong variable.
func TestParseErrorsDoNotEchoValues(t *testing.T) {
	for _, tt := range []struct{ key, want string }{
		{"ASK_NATS_REPLICAS", "ASK_NATS_REPLICAS must be a whole number"},
		{"ASK_SHUTDOWN_GRACE", "ASK_SHUTDOWN_GRACE must be a duration such as 10s or 2m"},
		{"ASK_MCP_PROGRESS", "ASK_MCP_PROGRESS must be a duration such as 10s or 2m"},
	} {
		t.Run(tt.key, func(t *testing.T) {
			clearEnv(t)
			t.Setenv(tt.key, "xoxb-Sekr3t-token")
			t.Setenv("ASK_SLACK_BOT_TOKEN", slackToken)
			t.Setenv("ASK_SLACK_SIGNING_SECRET", slackSecret)
			_, err := Load()
			if err == nil {
				t.Fatal("Load accepted a bad value")
			}
			if err.Error() != tt.want {
				t.Errorf("error = %q, want %q", err, tt.want)
			}
			assertNoSecret(t, err)
		})
	}
}

func TestWarnings(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want []string // the start of each warning
	}{
		{Config{NATSSync: "interval", NATSReplicas: 1}, nil},
		{Config{CLI: CLI{NATSURL: "nats://n1:4222", NATSCreds: "/etc/ask.creds"}, NATSReplicas: 3}, nil},
		{Config{CLI: CLI{NATSURL: "nats://n1:4222"}, NATSSync: "always", NATSReplicas: 1}, []string{"ASK_NATS_SYNC applies to the embedded NATS only"}},
		{Config{CLI: CLI{NATSCreds: "/etc/ask.creds"}, NATSSync: "always", NATSReplicas: 3},
			[]string{"ASK_NATS_REPLICAS applies to an external NATS cluster", "ASK_NATS_CREDS applies to an external NATS"}},
		{Config{NATSSync: "always", SlackBotToken: "xoxb-1", SlackChannel: "C0123", DiscordBotToken: "d", DiscordChannel: "1234", DiscordAdminRoles: []string{"42"}}, nil},
		{Config{NATSSync: "always", DiscordBotToken: "d", DiscordChannel: "general", DiscordAdminRoles: []string{"42", "Admins"}, DiscordOperatorRoles: []string{"ops"}},
			[]string{`ASK_DISCORD_CHANNEL should be a channel id, a number such as 1234567890123456789, not "general"`,
				`ASK_DISCORD_ADMIN_ROLES: "Admins" should be a role id`,
				`ASK_DISCORD_OPERATOR_ROLES: "ops" should be a role id`}},
	} {
		got := c.cfg.Warnings()
		ok := len(got) == len(c.want)
		for i := 0; ok && i < len(got); i++ {
			ok = strings.HasPrefix(got[i], c.want[i])
		}
		if !ok {
			t.Errorf("%+v: warnings %q, want %q", c.cfg, got, c.want)
		}
	}
}

// TestHalfConfiguredPlatformsWarn checks a chat platform given some of its
// settings but not its bot token stays off with a warning that names what
// is set and what is missing, in full, and never a value.
func TestHalfConfiguredPlatformsWarn(t *testing.T) {
	t.Parallel()
	key := strings.Repeat("ab", 32)
	for _, c := range []struct {
		name string
		set  func(*Config)
		want []string
	}{
		{"discord public key alone", func(c *Config) { c.DiscordPublicKey = key },
			[]string{"Discord is off: ASK_DISCORD_PUBLIC_KEY is set, but not ASK_DISCORD_BOT_TOKEN and ASK_DISCORD_APP_ID; set them to switch Discord on (docs/discord.md)"}},
		{"discord key, app and channel", func(c *Config) {
			c.DiscordPublicKey, c.DiscordAppID, c.DiscordChannel = key, "1234567890123456789", "1234567890123456789"
		}, []string{"Discord is off: ASK_DISCORD_PUBLIC_KEY, ASK_DISCORD_APP_ID and ASK_DISCORD_CHANNEL are set, but not ASK_DISCORD_BOT_TOKEN; set it to switch Discord on (docs/discord.md)"}},
		{"discord roles alone", func(c *Config) { c.DiscordAdminRoles = []string{"42"} },
			[]string{"Discord is off: ASK_DISCORD_ADMIN_ROLES is set, but not ASK_DISCORD_BOT_TOKEN, ASK_DISCORD_PUBLIC_KEY and ASK_DISCORD_APP_ID; set them to switch Discord on (docs/discord.md)"}},
		{"discord complete", func(c *Config) { c.DiscordBotToken, c.DiscordPublicKey, c.DiscordAppID = "Sekr3t", key, "1" }, nil},
		{"slack channel alone", func(c *Config) { c.SlackChannel = "C0123" },
			[]string{"Slack is off: ASK_SLACK_CHANNEL is set, but not ASK_SLACK_BOT_TOKEN with ASK_SLACK_SIGNING_SECRET (or ASK_SLACK_APP_TOKEN for Socket Mode); set them to switch Slack on (docs/slack.md)"}},
		{"slack complete", func(c *Config) {
			c.SlackBotToken, c.SlackSigningSecret, c.SlackChannel = "xoxb-Sekr3t", "Sekr3t", "C0123"
		}, nil},
		{"nothing", func(*Config) {}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cfg := Defaults()
			c.set(&cfg)
			if err := cfg.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if got := cfg.Warnings(); !reflect.DeepEqual(got, c.want) {
				t.Errorf("warnings %q\nwant     %q", got, c.want)
			}
			// The platform the warning names stays off.
			for _, p := range cfg.Platforms() {
				if off := len(c.want) > 0 && strings.HasPrefix(strings.ToLower(c.want[0]), string(p.Name)+" is off"); off && p.On {
					t.Errorf("%s is on", p.Name)
				}
			}
		})
	}
}
