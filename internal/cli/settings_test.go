package cli

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/hooks"
)

// parseBoth parses args into both flag sets, as the agent command does.
func parseBoth(t *testing.T, args ...string) (*AgentFlags, *ClaudeFlags) {
	t.Helper()
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var af AgentFlags
	var cf ClaudeFlags
	af.Register(fs)
	cf.Register(fs)
	if _, err := ParseInterspersed(fs, args); err != nil {
		t.Fatalf("%q: %v", args, err)
	}
	return &af, &cf
}

// --settings, as a JSON string or a file: hooks run after the settings
// files', rules join --allowedTools/--disallowedTools, the mode and model
// count where the command line names none, the rest is named as ignored.
func TestSettings(t *testing.T) {
	t.Parallel()
	doc := `{"model":"from-settings","permissions":{"allow":["Bash(git log:*)"],"deny":["WebFetch"],"defaultMode":"acceptEdits",` +
		`"additionalDirectories":["/srv"]},"hooks":{"Stop":[{"hooks":[{"type":"command","command":"true"}]}]},"env":{"A":"b"},"theme":"dark"}`
	file := filepath.Join(t.TempDir(), "settings.json")
	if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		args      []string
		wantMode  string
		wantModel string
	}{
		{"JSON", []string{"--settings", doc}, "acceptEdits", "from-settings"},
		{"file", []string{"--settings=" + file}, "acceptEdits", "from-settings"},
		{"the command line wins", []string{"--settings", doc, "--permission-mode", "plan", "--model", "m"}, "plan", "m"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			af, cf := parseBoth(t, append(tc.args, "--allowedTools=Read")...)
			if err := cf.ApplyTo(af); err != nil {
				t.Fatal(err)
			}
			if af.PermissionMode != tc.wantMode || af.Model != tc.wantModel {
				t.Errorf("mode %q model %q", af.PermissionMode, af.Model)
			}
			if !reflect.DeepEqual([]string(cf.AllowedTools), []string{"Read", "Bash(git log:*)"}) || !reflect.DeepEqual([]string(cf.DisallowedTools), []string{"WebFetch"}) {
				t.Errorf("allowed %q disallowed %q", cf.AllowedTools, cf.DisallowedTools)
			}
			if !reflect.DeepEqual([]string(af.AddDirs), []string{"/srv"}) || len(af.MoreHooks[hooks.Stop]) != 1 {
				t.Errorf("add dirs %q hooks %v", af.AddDirs, af.MoreHooks)
			}
			if n := cf.SettingsNote(); !strings.Contains(n, "env, theme") {
				t.Errorf("note %q does not name the ignored keys", n)
			}
		})
	}
}

func TestSettingsErrors(t *testing.T) {
	t.Parallel()
	for _, spec := range []string{`{"permissions":[]}`, `{"hooks":{"Stop":"x"}}`, `{not json`, filepath.Join(t.TempDir(), "missing.json")} {
		if _, err := LoadSettings(spec); err == nil {
			t.Errorf("%s: no error", spec)
		}
	}
}

// --thinking, --effort, --betas and --fallback-model reach the agent's
// flags; bad values are errors.
func TestThinkingEffortFlags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args         []string
		wantErr      bool
		wantAdaptive bool
		wantEffort   string
		wantBetas    []string
		wantFallback []string
	}{
		{[]string{"--thinking=enabled"}, false, true, "", nil, nil},
		{[]string{"--thinking", "adaptive", "--effort", "max"}, false, true, "max", nil, nil},
		{[]string{"--thinking=disabled", "--betas=a,b", "--betas", "c"}, false, false, "", []string{"a", "b", "c"}, nil},
		{[]string{"--fallback-model=x,y"}, false, false, "", nil, []string{"x", "y"}},
		{[]string{"--thinking=sometimes"}, true, false, "", nil, nil},
		{[]string{"--effort=extreme"}, true, false, "", nil, nil},
	}
	for _, tc := range tests {
		af, cf := parseBoth(t, tc.args...)
		err := cf.ApplyTo(af)
		if (err != nil) != tc.wantErr {
			t.Errorf("%q: err %v", tc.args, err)
			continue
		}
		if tc.wantErr {
			continue
		}
		if af.AdaptiveThinking != tc.wantAdaptive || af.Effort != tc.wantEffort || !reflect.DeepEqual(af.Betas, tc.wantBetas) ||
			!reflect.DeepEqual(af.FallbackModels, tc.wantFallback) {
			t.Errorf("%q: adaptive %v effort %q betas %q fallback %q", tc.args, af.AdaptiveThinking, af.Effort, af.Betas, af.FallbackModels)
		}
	}
}

// FuzzParseSettings: any document parses or fails cleanly, and what parses
// is consistent: the ignored keys sorted, none of them one sluice takes.
func FuzzParseSettings(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"model":"m"}`, `{"permissions":{"allow":["Bash(git log:*)"],"deny":["Read"],"defaultMode":"plan","ask":["x"]}}`,
		`{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"true"}]}]},"env":{"A":"b"}}`, `[]`, `{"hooks":null}`, `{"permissions":null}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseSettings(data)
		if err != nil {
			return
		}
		if !sort.StringsAreSorted(s.Ignored) {
			t.Fatalf("ignored keys not sorted: %q", s.Ignored)
		}
		for _, k := range s.Ignored {
			if k == "hooks" || k == "model" || k == "permissions" {
				t.Fatalf("%q reported ignored", k)
			}
		}
	})
}
