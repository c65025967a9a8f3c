package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/sluicehq/sluice/internal/fakemodel"
	"github.com/sluicehq/sluice/internal/streamjson"
)

// The scripts in testdata/script run the real sluice binary (this test
// binary, re-executed as "sluice") against fake model servers that live in
// the test process, so that a script can also ask what the model was sent.
//
// Commands added to testscript's own:
//
//	fakemodel anthropic|openai|openai-responses ANSWER...
//	    start a fake model server answering the requests with ANSWERs in
//	    order (see fakemodel.ParseReplies) and point sluice at it
//	    (ANTHROPIC_BASE_URL, or OPENAI_BASE_URL with /v1)
//	fakemodel requests
//	    print what each request carried (fakemodel.Summary)
//	linetypes FILE
//	    check that every line of FILE is a JSON object whose first field is
//	    "type", and print each line's kind: type, then /subtype or the
//	    stream event's /type
//	ccshape [-openai] FILE RECORDING
//	    compare sluice's stream-json in FILE with Claude Code's RECORDING of
//	    the same model answers (streamjson.CompareWithClaudeCode), or
//	    with the shape of one (RECORDING.shape.json: streamjson.CompareShape)
//	exitcode N PROGRAM [ARGS...]
//	    run PROGRAM as exec does and check that it exits with status N
//	sessionid FILE
//	    set $SESSION_ID to the session_id of FILE's first line that has one
//
// Each script runs with SLUICE_HOME=$WORK (sessions under $WORK/projects),
// $FIXTURES naming testdata/fixtures, and no API key unless it sets one.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){"sluice": main})
}

func TestScript(t *testing.T) {
	t.Parallel()
	fixtures, err := filepath.Abs("testdata/fixtures")
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		Setup: func(env *testscript.Env) error {
			env.Setenv("SLUICE_HOME", env.WorkDir)
			env.Setenv("FIXTURES", fixtures)
			env.Values[fakeKey{}] = &fakeModels{}
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"fakemodel": cmdFakeModel,
			"linetypes": cmdLineTypes,
			"ccshape":   cmdCCShape,
			"sessionid": cmdSessionID,
			"exitcode":  cmdExitCode,
		},
	})
}

type fakeKey struct{}

// fakeModels is the script's fake model server, if it started one.
type fakeModels struct {
	srv    *fakemodel.Script
	format string
}

func cmdFakeModel(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! fakemodel")
	}
	fm := ts.Value(fakeKey{}).(*fakeModels)
	if len(args) == 0 {
		ts.Fatalf("usage: fakemodel anthropic|openai|openai-responses ANSWER... | fakemodel requests")
	}
	if args[0] == "requests" {
		if fm.srv == nil {
			ts.Fatalf("fakemodel requests: no fake model started")
		}
		s, err := fakemodel.Summary(fm.format, fm.srv.Requests())
		ts.Check(err)
		fmt.Fprint(ts.Stdout(), s)
		return
	}
	if fm.srv != nil {
		ts.Fatalf("fakemodel: a fake model is already running; one per script")
	}
	specs := make([]string, len(args)-1)
	for i, a := range args[1:] {
		specs[i] = a
		if strings.HasSuffix(a, ".ndjson") || strings.HasSuffix(a, ".sse") {
			specs[i] = ts.MkAbs(a)
		}
	}
	answers, err := fakemodel.ParseReplies(specs)
	ts.Check(err)
	srv, err := fakemodel.NewScript(args[0], answers)
	ts.Check(err)
	ts.Defer(srv.Close)
	fm.srv, fm.format = srv, args[0]
	if args[0] == fakemodel.OpenAI || args[0] == fakemodel.OpenAIResponses {
		ts.Setenv("OPENAI_BASE_URL", srv.URL)
	} else {
		ts.Setenv("ANTHROPIC_BASE_URL", srv.URL)
	}
}

func cmdLineTypes(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: linetypes FILE")
	}
	kinds, err := streamjson.LineKinds([]byte(ts.ReadFile(args[0])))
	ts.Check(err)
	for _, k := range kinds {
		fmt.Fprintln(ts.Stdout(), k)
	}
}

func cmdCCShape(ts *testscript.TestScript, neg bool, args []string) {
	opts := streamjson.CompareOptions{}
	if len(args) > 0 && args[0] == "-openai" {
		opts.OpenAI = true
		args = args[1:]
	}
	if len(args) != 2 {
		ts.Fatalf("usage: ccshape [-openai] FILE RECORDING")
	}
	var diffs []string
	if strings.HasSuffix(args[1], ".shape.json") { // a recording of the shape alone
		diffs = streamjson.CompareShape([]byte(ts.ReadFile(args[0])), []byte(ts.ReadFile(args[1])))
	} else {
		diffs = streamjson.CompareWithClaudeCode([]byte(ts.ReadFile(args[0])), []byte(ts.ReadFile(args[1])), opts)
	}
	switch {
	case neg && len(diffs) == 0:
		ts.Fatalf("%s has Claude Code's shape; want differences", args[0])
	case !neg && len(diffs) > 0:
		ts.Fatalf("%s differs from Claude Code's %s:\n%s", args[0], args[1], strings.Join(diffs, "\n"))
	}
}

func cmdExitCode(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exitcode N PROGRAM [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	got := 0
	var exit *exec.ExitError
	switch err := ts.Exec(args[1], args[2:]...); {
	case errors.As(err, &exit):
		got = exit.ExitCode()
	case err != nil:
		ts.Fatalf("%s: %v", args[1], err)
	}
	if got != want {
		ts.Fatalf("%s exited with status %d, want %d", args[1], got, want)
	}
}

func cmdSessionID(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: sessionid FILE")
	}
	sc := bufio.NewScanner(bytes.NewReader([]byte(ts.ReadFile(args[0]))))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var line struct {
			SessionID string `json:"session_id"`
		}
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.SessionID != "" {
			ts.Setenv("SESSION_ID", line.SessionID)
			return
		}
	}
	ts.Fatalf("sessionid: no session_id in %s", args[0])
}
