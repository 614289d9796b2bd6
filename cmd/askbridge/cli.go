package main

import (
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/nats-io/nats.go"

	"github.com/askbridge/askbridge/bridge/principal"
)

// cli runs the command-line tools. Every tool speaks NATS, never the store.
type cli struct {
	stdout, stderr io.Writer
	// identity is who the tools act as: cli:<os user>.
	identity string
	// natsURL overrides the environment (tests, --nats).
	natsURL string
	// natsOpts are added to connect's options (askbridge mcp, which
	// lives as long as its client, reconnects for ever).
	natsOpts []nats.Option
	// creds is --creds, a NATS credentials file.
	creds string
	// dataDir overrides ASK_DATA_DIR (tests).
	dataDir string
	// credKind is the kind of the credential connect presented, when read
	// from a file: a person's may not read the job's events.
	credKind string
	// ownerAs is what the data directory's owner connects as without
	// credentials of their own; nil is an admin (docs/contract.md,
	// "Principals on the bus").
	ownerAs *principal.Spec
}

// decisionWait bounds how long answer and decline wait for the runtime.
const decisionWait = 15 * time.Second

func (c *cli) flags(name string) (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet("askbridge "+name, flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	url := fs.String("nats", "", "NATS URL (default: ASK_NATS_URL, else the embedded server at ASK_NATS_LISTEN)")
	fs.StringVar(&c.creds, "creds", c.creds, "NATS credentials file (default: ASK_NATS_CREDS; without one, the data directory's owner acts as an admin)")
	return fs, url
}

func (c *cli) fail(format string, args ...any) int {
	// Refusals quote what agents and people wrote: shown, never obeyed.
	fmt.Fprintln(c.stderr, printable("askbridge: "+fmt.Sprintf(format, args...), true))
	return exitError
}

// printable is text written by agents or people made safe for a terminal:
// control characters, which could clear the screen, retitle the window or
// write the clipboard, and bidirectional overrides, which could show text
// in another order than it is, appear as escapes such as \x1b. Line breaks
// stay when keepLines, else they and tabs become spaces (a table cell).
func printable(s string, keepLines bool) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n' && keepLines:
			b.WriteRune(r)
		case r == '\n' || r == '\t' || r == '\r':
			b.WriteByte(' ')
		case r == utf8.RuneError, unicode.IsControl(r), unicode.Is(unicode.Bidi_Control, r):
			q := strconv.QuoteToASCII(string(r))
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// row writes label and value as one row of tw, a value of several lines as
// several rows, each line made printable.
func row(tw io.Writer, label, value string) {
	for i, line := range strings.Split(strings.ReplaceAll(value, "\r\n", "\n"), "\n") {
		if i > 0 {
			label = ""
		}
		fmt.Fprintf(tw, "%s\t%s\n", label, printable(line, false))
	}
}

// multiFlag collects a repeated string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func newID(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// parseFlags parses args with fs, taking fs's flags wherever they stand
// among the arguments, as people write them ("show JOB/Q --tenant acme",
// "ask 'Which colour?' --choice red"). With onlyKnown only fs's own flags
// move, and every other argument, dashes and all, stays an argument (an
// answer such as "-5", a question's words); else any dashed word is taken
// for a flag, and an unknown one is an error.
func parseFlags(fs *flag.FlagSet, args []string, onlyKnown bool) error {
	flags := map[string]bool{"h": false, "help": false}
	fs.VisitAll(func(f *flag.Flag) {
		b, ok := f.Value.(interface{ IsBoolFlag() bool })
		flags[f.Name] = !ok || !b.IsBoolFlag()
	})
	return fs.Parse(reorder(args, flags, onlyKnown))
}

// reorder moves flags written after positional arguments to the front, so
// that "decline JOB Q --comment why" parses as people write it; flags maps
// the flags' names to whether they take a value (--tenant acme or
// --tenant=acme). With onlyKnown only those move, and every other argument,
// dashes and all, stays where it is. "--" ends the flags; the arguments
// follow one, so none of them is read as a flag.
func reorder(args []string, flags map[string]bool, onlyKnown bool) []string {
	var moved, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		valued, known := flags[name]
		if strings.HasPrefix(a, "-") && len(a) > 1 && (!onlyKnown || known) {
			moved = append(moved, a)
			if !hasValue && valued && i+1 < len(args) {
				moved = append(moved, args[i+1])
				i++
			}
			continue
		}
		pos = append(pos, a)
	}
	if len(pos) == 0 {
		return moved
	}
	return append(append(moved, "--"), pos...)
}
