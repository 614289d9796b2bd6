package config

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/askbridge/askbridge/bridge"
)

// Validate tidies c (lists trimmed of blanks, ASK_PUBLIC_URL without its
// trailing /, ASK_STORE in lower case, ASK_NATS_SYNC's default), parses
// ASK_PEOPLE into People, and returns one line per problem, each naming
// the variable. The checks run by group, their problems in this order.
func (c *Config) Validate() error {
	c.normalize()
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	for _, check := range []func(func(string, ...any)){c.checkAddresses, c.checkPublicURL, c.checkSlack, c.checkDiscord, c.checkAccess, c.checkRest} {
		check(bad)
	}
	if len(problems) > 0 {
		return &Error{Problems: problems}
	}
	return nil
}

// checkAddresses checks where the data, HTTP and NATS are, and how
// NATS and the record keep what they write.
func (c *Config) checkAddresses(bad func(format string, args ...any)) {
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
}

// checkPublicURL checks ASK_PUBLIC_URL, the base of every link.
func (c *Config) checkPublicURL(bad func(format string, args ...any)) {
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
}

// checkSlack checks Slack's settings: which go together, and their forms.
func (c *Config) checkSlack(bad func(format string, args ...any)) {
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
}

// checkDiscord checks Discord's settings: which go together, and their
// forms.
func (c *Config) checkDiscord(bad func(format string, args ...any)) {
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
}

// checkAccess checks who may do what: the console's secret, the role
// lists and ASK_PEOPLE, which it parses into People.
func (c *Config) checkAccess(bad func(format string, args ...any)) {
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
}

// checkRest checks the policy file's path, the time zone, the log
// level, MCP, the metrics and the stop.
func (c *Config) checkRest(bad func(format string, args ...any)) {
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
