package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/policy"
)

const policyUsage = `Usage of askbridge policy:
  askbridge policy check FILE
        check a policy file (ASK_POLICY, docs/contract.md "The policy file") without starting anything:
        print "FILE: ok (N tenants, M actions)" and exit 0, or its first problem as FILE:LINE: ... and exit 2
`

// policy runs "askbridge policy check FILE": the checks the service makes
// at start and on SIGHUP, for an operator to run before either.
func (c *cli) policy(_ context.Context, args []string) int {
	fs := flag.NewFlagSet("askbridge policy", flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	if code, ok := c.parse(fs, args, false); !ok {
		return code
	}
	if fs.NArg() == 0 || fs.Arg(0) != "check" {
		what := "askbridge policy: name a command: check FILE"
		if fs.NArg() > 0 {
			what = fmt.Sprintf("askbridge policy: unknown command %q; the command is check FILE", fs.Arg(0))
		}
		fmt.Fprint(c.stderr, printable(what, false)+"\n\n"+policyUsage)
		return exitConfig
	}
	if fs.NArg() != 2 {
		fmt.Fprint(c.stderr, "askbridge policy check: name one file\n\n"+policyUsage)
		return exitConfig
	}
	file := fs.Arg(1)
	p, err := policy.Load(file)
	if err != nil {
		fmt.Fprintln(c.stderr, printable(err.Error(), false))
		return exitConfig
	}
	// Its people: must not link again what ASK_PEOPLE links, as serve
	// checks at start and on SIGHUP (loadPolicy).
	env, err := c.envPeople()
	if err == nil {
		if _, err = bridge.MergePeople(env, p.People); err != nil {
			err = &policy.Error{File: file, Path: "people", Problem: err.Error()}
		}
	}
	if err != nil {
		fmt.Fprintln(c.stderr, printable(err.Error(), false))
		return exitConfig
	}
	tenants, actions := p.Count()
	counts := plural(tenants, "tenant") + ", " + plural(actions, "action")
	switch n := len(p.People); {
	case n == 1:
		counts += ", 1 person"
	case n > 1:
		counts += fmt.Sprintf(", %d people", n)
	}
	fmt.Fprintln(c.stdout, printable(fmt.Sprintf("%s: ok (%s)", file, counts), false))
	return exitOK
}

// plural is "1 tenant", "2 tenants", "0 tenants".
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// envPeople are the people ASK_PEOPLE links.
func (c *cli) envPeople() (bridge.People, error) {
	s, err := c.settings()
	if err != nil {
		return nil, err
	}
	people, err := bridge.ParsePeople(s.PeopleList)
	if err != nil {
		return nil, fmt.Errorf("ASK_PEOPLE: %w", err)
	}
	return people, nil
}
