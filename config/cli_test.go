package config

import "testing"

// TestLoadCLIReadsAsTheService: the tools read their variables, and take
// their defaults, as the service does.
func TestLoadCLIReadsAsTheService(t *testing.T) {
	for _, env := range []map[string]string{
		{},
		{"ASK_DATA_DIR": "/srv/ask", "ASK_NATS_URL": "nats://n1:4222", "ASK_NATS_CREDS": "/etc/ask.creds",
			"ASK_NATS_LISTEN": "0.0.0.0:4333", "ASK_PEOPLE": "kevin=slack:U0KEV|cli:kevin"},
	} {
		clearEnv(t)
		setEnv(t, env)
		tools, err := LoadCLI()
		if err != nil {
			t.Fatal(err)
		}
		svc, err := Load()
		if err != nil {
			t.Fatal(err)
		}
		if tools != svc.CLI {
			t.Errorf("with %v the tools read %+v, the service %+v", env, tools, svc.CLI)
		}
		if len(env) == 0 && (tools.DataDir != "./data" || tools.NATSListen != "127.0.0.1:4222" || tools != Defaults().CLI) {
			t.Errorf("defaults: %+v, Defaults() %+v", tools, Defaults().CLI)
		}
	}
}

func TestNATSClientURL(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		cli  CLI
		want string
	}{
		{CLI{NATSListen: "127.0.0.1:4222"}, "nats://127.0.0.1:4222"},
		{CLI{NATSListen: ":4333"}, "nats://127.0.0.1:4333"},
		{CLI{NATSListen: "0.0.0.0:4333"}, "nats://127.0.0.1:4333"},
		{CLI{NATSListen: "[::]:4333"}, "nats://127.0.0.1:4333"},
		{CLI{NATSListen: "ask.example:4222"}, "nats://ask.example:4222"},
		{CLI{NATSURL: "nats://n1:4222,nats://n2:4222", NATSListen: "127.0.0.1:4222"}, "nats://n1:4222,nats://n2:4222"},
		{CLI{NATSListen: "4222"}, ""},
	} {
		got, err := c.cli.NATSClientURL()
		if got != c.want || (err != nil) != (c.want == "") {
			t.Errorf("%+v: %q, %v; want %q", c.cli, got, err, c.want)
		}
	}
}
