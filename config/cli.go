package config

import (
	"fmt"
	"net"
	"reflect"

	"github.com/kelseyhightower/envconfig"
)

// CLI are the settings the command-line tools read as the service does:
// where its NATS is, the credential to present there, the data
// directory whose keys its owner may use, and the people it links.
// Config embeds CLI, so each of these variables, and its default, is
// given once: here.
type CLI struct {
	DataDir    string `envconfig:"ASK_DATA_DIR" default:"./data"`
	NATSURL    string `envconfig:"ASK_NATS_URL"`
	NATSCreds  string `envconfig:"ASK_NATS_CREDS"`
	NATSListen string `envconfig:"ASK_NATS_LISTEN" default:"127.0.0.1:4222"`
	// PeopleList links identities into persons (ASK_PEOPLE,
	// kevin=slack:U0KEV|discord:333...,ana=slack:U0ANA); Config.People is
	// it parsed (docs/contract.md, "People").
	PeopleList string `envconfig:"ASK_PEOPLE"`
}

// LoadCLI reads the tools' settings from the environment, as Load reads
// the service's (no prefix: each tag names its variable whole), and
// checks nothing else: a tool runs whatever the service's other
// variables say.
func LoadCLI() (CLI, error) {
	var c CLI
	if err := envconfig.Process("", &c); err != nil {
		return c, parseError(err)
	}
	return c, nil
}

// NATSClientURL is the NATS a tool connects to: ASK_NATS_URL, else the
// service's embedded server at ASK_NATS_LISTEN, whose wildcard host
// (empty, 0.0.0.0, ::) is reached at 127.0.0.1.
func (c CLI) NATSClientURL() (string, error) {
	if c.NATSURL != "" {
		return c.NATSURL, nil
	}
	host, port, err := net.SplitHostPort(c.NATSListen)
	if err != nil {
		return "", fmt.Errorf("ASK_NATS_LISTEN %q is not host:port", c.NATSListen)
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	return "nats://" + net.JoinHostPort(host, port), nil
}

// cliDefaults is CLI with no variable set: its default tags, the one
// place they are given (Defaults reads them here).
func cliDefaults() CLI {
	var c CLI
	v := reflect.ValueOf(&c).Elem()
	for i := range v.NumField() {
		if d, ok := v.Type().Field(i).Tag.Lookup("default"); ok {
			v.Field(i).SetString(d) // every field of CLI is a string
		}
	}
	return c
}
