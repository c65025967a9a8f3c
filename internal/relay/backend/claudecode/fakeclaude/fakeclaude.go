// Package fakeclaude turns a test binary into a stand-in for the claude
// executable that replays recorded stream-json runs. A test's TestMain
// calls Main first; when the environment names a fixture directory, the
// process is the fake and exits, otherwise Main returns and the tests run.
// The tests then use os.Args[0] as the claude command, with Env.
//
// The prompt (standard input) chooses the run: "NAME" replays
// DIR/NAME, "hang:NAME:N" replays its first N lines and then waits for an
// interrupt (to test aborts). Every invocation's arguments and prompt are
// appended to DIR's log file, one JSON line each.
package fakeclaude

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

const envDir = "SLUICE_FAKE_CLAUDE_DIR"

// LogFile is the name of the invocation log in the fixture directory.
const LogFile = "invocations.log"

// Env returns the environment that makes the test binary the fake, replaying
// runs from dir.
func Env(dir string) []string {
	return append(os.Environ(), envDir+"="+dir)
}

// Invocation is one logged run of the fake.
type Invocation struct {
	Args   []string `json:"args"`
	Prompt string   `json:"prompt"`
}

// Invocations reads dir's log.
func Invocations(dir string) ([]Invocation, error) {
	data, err := os.ReadFile(filepath.Join(dir, LogFile))
	if err != nil {
		return nil, err
	}
	var out []Invocation
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var inv Invocation
		if err := json.Unmarshal([]byte(l), &inv); err != nil {
			return nil, err
		}
		out = append(out, inv)
	}
	return out, nil
}

// Main is the fake's entry point; it returns at once when the process is
// not meant to be the fake.
func Main() {
	dir := os.Getenv(envDir)
	if dir == "" {
		return
	}
	os.Exit(run(dir))
}

func run(dir string) int {
	prompt, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if f, err := os.OpenFile(filepath.Join(dir, LogFile), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
		line, _ := json.Marshal(Invocation{Args: os.Args[1:], Prompt: string(prompt)})
		f.Write(append(line, '\n'))
		f.Close()
	}
	name, hangAfter := strings.TrimSpace(string(prompt)), -1
	if rest, ok := strings.CutPrefix(name, "hang:"); ok {
		i := strings.LastIndexByte(rest, ':')
		if i < 0 {
			fmt.Fprintln(os.Stderr, "fakeclaude: hang:NAME:N")
			return 2
		}
		name = rest[:i]
		if hangAfter, err = strconv.Atoi(rest[i+1:]); err != nil {
			fmt.Fprintln(os.Stderr, "fakeclaude:", err)
			return 2
		}
	}
	f, err := os.Open(filepath.Join(dir, filepath.Base(name)))
	if err != nil {
		fmt.Fprintf(os.Stderr, "fakeclaude: no recorded run for %q\n", name)
		return 1
	}
	defer f.Close()
	interrupted := make(chan os.Signal, 1)
	signal.Notify(interrupted, os.Interrupt, syscall.SIGTERM)
	w := bufio.NewWriter(os.Stdout)
	br := bufio.NewReader(f)
	for n := 0; hangAfter < 0 || n < hangAfter; n++ {
		line, err := br.ReadBytes('\n')
		w.Write(line)
		if err != nil {
			break
		}
	}
	w.Flush()
	if hangAfter >= 0 {
		<-interrupted
		return 130
	}
	return 0
}
