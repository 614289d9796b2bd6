package main

// The docs test runs one Markdown file's marked blocks in order, with
// bash, in a session: a working directory that holds ./data, askbridge
// first on PATH, and the service a block started (docs/design.md,
// "Testing": "The docs' examples").

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/askbridge/askbridge/internal/testenv"
)

// docSession is where one file's blocks run.
type docSession struct {
	t    *testing.T
	root string // the repository's root, for repo blocks
	dir  string // the working directory: the folder that holds ./data
	env  []string
	// natsURL and dataDir are the service's, once a service block started it.
	natsURL, dataDir string
	service          *docProc
	background       []docBackground
}

// docProc is a block's bash, in a process group of its own, so that
// whatever it started ends with it.
type docProc struct {
	cmd  *exec.Cmd
	out  *testenv.LockedBuffer // stdout and stderr, as a terminal shows them
	done chan struct{}         // closed once bash has exited
	err  error                 // what Wait returned, once done
}

// docBackground is a background block running beside the next ones.
type docBackground struct {
	b    docBlock
	cmds []docCommand
	sep  string
	p    *docProc
}

// newDocSession makes a session in a new directory, with askbridge (this
// test binary, which runs as askbridge's main: TestMain) first on PATH and
// HOME a folder of its own. The service's addresses are port 0 until a
// service block starts it, so it never takes a port someone else uses;
// then they are the ones it listens on.
func newDocSession(t *testing.T, root string) *docSession {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	s := &docSession{t: t, root: root, dir: t.TempDir()}
	bin, home := filepath.Join(s.dir, ".bin"), filepath.Join(s.dir, ".home")
	for _, d := range []string{bin, home} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(self, filepath.Join(bin, "askbridge")); err != nil {
		t.Fatal(err)
	}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(k, "ASK_") && k != "HOME" && k != "PATH" && k != "ASKBRIDGE_TEST_AS_MAIN" {
			s.env = append(s.env, kv)
		}
	}
	s.env = append(s.env, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "HOME="+home,
		"ASKBRIDGE_TEST_AS_MAIN=1", "ASK_HTTP_ADDR=127.0.0.1:0", "ASK_NATS_LISTEN=127.0.0.1:0")
	t.Cleanup(s.stop)
	return s
}

// setEnv sets a variable of the session's environment.
func (s *docSession) setEnv(key, value string) {
	for i, kv := range s.env {
		if strings.HasPrefix(kv, key+"=") {
			s.env[i] = key + "=" + value
			return
		}
	}
	s.env = append(s.env, key+"="+value)
}

// start runs script with bash in dir.
func (s *docSession) start(script, dir string, env []string) (*docProc, error) {
	p := &docProc{cmd: exec.Command("bash", "-c", script), out: &testenv.LockedBuffer{}, done: make(chan struct{})}
	p.cmd.Dir, p.cmd.Env = dir, env
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out // one pipe: the order a terminal shows
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Bounds the wait for output a process the block left behind holds
	// open; stop ends that process.
	p.cmd.WaitDelay = testenv.Patience
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// wait waits for bash to exit, a hang detector's while; false means it
// did not, and stop will end it.
func (p *docProc) wait() bool {
	select {
	case <-p.done:
		return true
	case <-time.After(testenv.Patience):
		return false
	}
}

// exited reports whether bash has exited.
func (p *docProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// end stops the process group: SIGTERM, as Ctrl-C or a supervisor would,
// then SIGKILL for what is left after a hang detector's while.
func (p *docProc) end(t *testing.T) {
	pgid := p.cmd.Process.Pid
	gone := func() bool { return errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH) }
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		if gone() {
			break
		}
		_ = syscall.Kill(-pgid, sig)
		for deadline := time.Now().Add(testenv.Patience); !gone() && time.Now().Before(deadline); {
			time.Sleep(20 * time.Millisecond)
		}
	}
	<-p.done
	if !gone() {
		t.Errorf("processes of group %d outlived SIGKILL", pgid)
	}
}

// stop ends every process the session's blocks started, the service last.
func (s *docSession) stop() {
	for _, bg := range s.background {
		bg.p.end(s.t)
	}
	if s.service != nil {
		s.service.end(s.t)
		if s.t.Failed() {
			s.t.Logf("the service's output:\n%s", s.service.out)
		}
	}
}

// run runs one marked block: a script waited for and checked, the service
// started, or a background block started; a skipped block does nothing.
func (s *docSession) run(b docBlock) error {
	cmds, err := parseCommands(b)
	if err != nil {
		return err
	}
	switch b.mode {
	case modeRun, modeRepo:
		dir, env := s.dir, s.env
		if b.mode == modeRepo {
			// The repository's own tools (go) with the caller's HOME, where
			// Go keeps its caches.
			dir, env = s.root, append(append([]string{}, s.env...), "HOME="+os.Getenv("HOME"))
		}
		script, sep := docScript(b, cmds)
		p, err := s.start(script, dir, env)
		if err != nil {
			return err
		}
		defer p.end(s.t)
		if !p.wait() {
			return fmt.Errorf("%s: still running after %v (a hang); it printed:\n%s", b.where(), testenv.Patience, p.out)
		}
		return checkBlock(b, cmds, sep, p)
	case modeService:
		return s.startService(b)
	case modeBackground:
		return s.startBackground(b, cmds)
	}
	return nil
}

// docScript is the bash script of a block: a script without "$ " as it
// stands, under set -e; else each command followed by a line, marked
// with a random separator, that holds its exit status.
func docScript(b docBlock, cmds []docCommand) (script, sep string) {
	if cmds == nil {
		return "set -eo pipefail\n" + strings.Join(b.body, "\n") + "\n", ""
	}
	var r [8]byte
	_, _ = rand.Read(r[:])
	sep = "docs-test-" + hex.EncodeToString(r[:])
	var sb strings.Builder
	for _, c := range cmds {
		fmt.Fprintf(&sb, "%s\nprintf '\\n%s %%d\\n' \"$?\"\n", c.text, sep)
	}
	return sb.String(), sep
}

// checkBlock compares what a block's bash printed with the docs.
func checkBlock(b docBlock, cmds []docCommand, sep string, p *docProc) error {
	out := p.out.String()
	if cmds == nil {
		if p.err != nil {
			return fmt.Errorf("%s: %v; it printed:\n%s", b.where(), p.err, out)
		}
		return nil
	}
	marks := regexp.MustCompile(`\n`+sep+` (\d+)\n`).FindAllStringSubmatchIndex(out, -1)
	var problems []string
	from := 0
	for i, c := range cmds {
		if i >= len(marks) {
			problems = append(problems, fmt.Sprintf("%s:%d: never ran (the block stopped before it): $ %s", b.file, c.line, c.text))
			continue
		}
		got := strings.Split(out[from:marks[i][0]], "\n")
		exit, _ := strconv.Atoi(out[marks[i][2]:marks[i][3]])
		from = marks[i][1]
		d := outputDiff(c.want, got)
		if exit != c.exit {
			d = strings.TrimPrefix(d+fmt.Sprintf("\n  exit status %d, the docs show %d", exit, c.exit), "\n  ")
		}
		if d != "" {
			problems = append(problems, fmt.Sprintf("%s:%d: $ %s\n  %s\n  printed:\n    %s",
				b.file, c.line, c.text, d, strings.Join(trimLines(got), "\n    ")))
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "\n"))
	}
	return nil
}

var (
	natsListening = regexp.MustCompile(`msg="embedded NATS listening" url=(\S+)`)
	serving       = regexp.MustCompile(`msg="askbridge serving" http=(\S+) .*data=(\S+)`)
)

// startService runs a service block and waits until the service it starts
// serves (its log says so); later blocks reach it at the addresses it
// listens on.
func (s *docSession) startService(b docBlock) error {
	if s.service != nil {
		return fmt.Errorf("%s: a second service block in one file", b.where())
	}
	p, err := s.start(strings.Join(b.body, "\n")+"\n", s.dir, s.env)
	if err != nil {
		return err
	}
	s.service = p
	testenv.CheckFor(s.t, 2*testenv.Patience, 20*time.Millisecond, func() error {
		if p.exited() {
			s.t.Fatalf("%s: the service exited (%v) before it served:\n%s", b.where(), p.err, p.out)
		}
		if !strings.Contains(p.out.String(), `msg="askbridge serving"`) {
			return fmt.Errorf("%s: the service does not serve yet:\n%s", b.where(), p.out)
		}
		return nil
	})
	out := p.out.String()
	n, h := natsListening.FindStringSubmatch(out), serving.FindStringSubmatch(out)
	if n == nil || h == nil {
		return fmt.Errorf("%s: the service's log names no embedded NATS or HTTP address:\n%s", b.where(), out)
	}
	u, err := neturl.Parse(n[1])
	if err != nil {
		return err
	}
	s.natsURL, s.dataDir = n[1], h[2]
	if !filepath.IsAbs(s.dataDir) {
		s.dataDir = filepath.Join(s.dir, s.dataDir)
	}
	s.setEnv("ASK_NATS_LISTEN", net.JoinHostPort(u.Hostname(), u.Port()))
	s.setEnv("ASK_HTTP_ADDR", h[1])
	return nil
}

// startBackground starts a background block and waits until the question
// it names is recorded, so that the blocks after it find it.
func (s *docSession) startBackground(b docBlock, cmds []docCommand) error {
	if s.service == nil {
		return fmt.Errorf("%s: a background block waits for a question of the service; no service block came before it", b.where())
	}
	script, sep := docScript(b, cmds)
	p, err := s.start(script, s.dir, s.env)
	if err != nil {
		return err
	}
	s.background = append(s.background, docBackground{b: b, cmds: cmds, sep: sep, p: p})
	parts := strings.Split(b.arg, "/")
	c := &cli{stdout: io.Discard, stderr: io.Discard, identity: "cli:docs-test", natsURL: s.natsURL, dataDir: s.dataDir}
	testenv.CheckFor(s.t, testenv.Patience, 20*time.Millisecond, func() error {
		if p.exited() {
			s.t.Fatalf("%s: ended before question %s was recorded (%v):\n%s", b.where(), b.arg, p.err, p.out)
		}
		nc, _, err := c.connect("")
		if err != nil {
			return err
		}
		defer nc.Close()
		_, err = c.findQuestion(nc, parts[0], parts[1], parts[2])
		return err
	})
	return nil
}

// finish waits for the background blocks, which the blocks after them
// brought to an end, and checks what they printed.
func (s *docSession) finish() error {
	var problems []string
	for _, bg := range s.background {
		if !bg.p.wait() {
			problems = append(problems, fmt.Sprintf("%s: still running after the file's last block (a hang); it printed:\n%s", bg.b.where(), bg.p.out))
			continue
		}
		if err := checkBlock(bg.b, bg.cmds, bg.sep, bg.p); err != nil {
			problems = append(problems, err.Error())
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "\n"))
	}
	return nil
}
