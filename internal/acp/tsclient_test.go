package acp

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/fakemodel"
	"github.com/sluicehq/sluice/internal/testbin"
)

// TestTypeScriptSDK runs the official ACP TypeScript SDK
// (@agentclientprotocol/sdk, pinned in tstest/package-lock.json) as the
// client of the built sluice binary, against a local fake Anthropic server:
// see tstest/acp.test.mjs for the scenarios. It needs node and npm; CI sets
// SLUICE_REQUIRE_NODE so that it cannot skip there.
func TestTypeScriptSDK(t *testing.T) {
	node, nerr := exec.LookPath("node")
	npm, perr := exec.LookPath("npm")
	if nerr != nil || perr != nil {
		if os.Getenv("SLUICE_REQUIRE_NODE") != "" {
			t.Fatalf("node and npm are required (SLUICE_REQUIRE_NODE): %v %v", nerr, perr)
		}
		t.Skip("node or npm not found")
	}
	dir, err := filepath.Abs("tstest")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@agentclientprotocol", "sdk", "package.json")); err != nil {
		cmd := exec.Command(npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm ci: %v\n%s", err, out)
		}
	}
	bin := testbin.Sluice(t)

	work := t.TempDir()
	for name, text := range map[string]string{"edit.txt": "alpha beta\n", "buffer.txt": "on disk\n", "write.txt": "before write\n"} {
		if err := os.WriteFile(filepath.Join(work, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	release := make(chan struct{})
	defer close(release)
	fake := fakemodel.New(func(r fakemodel.Request) fakemodel.Answer {
		if len(r.Images) > 0 {
			// What the model got, for the client to compare with what it sent.
			var b strings.Builder
			for _, img := range r.Images {
				fmt.Fprintf(&b, "%s %s;", img.MediaType, img.Data)
			}
			return fakemodel.Answer{Text: []string{"text ", strconv.Quote(r.LastUserText), " images ", b.String()}}
		}
		if r.ToolResult != "" || r.LastUserText == "" {
			return fakemodel.Answer{Text: []string{"tool result: ", r.ToolResult}}
		}
		switch strings.TrimSpace(r.LastUserText) {
		case "plain":
			return fakemodel.Answer{Text: fakemodel.Chunks("The exact answer: ünïcödé, a 🎉 and \"quotes\".\nSecond line.", 5)}
		case "reason":
			return fakemodel.Answer{Reasoning: []string{"Thinking ", "it over"}, Text: []string{"Reasoned", " answer"}}
		case "bash", "term":
			return fakemodel.Answer{Tool: &fakemodel.ToolCall{ID: "toolu_bash", Name: "Bash", Input: map[string]any{"command": "echo tool-ran"}}}
		case "edit":
			return fakemodel.Answer{Tool: &fakemodel.ToolCall{ID: "toolu_edit", Name: "Edit", Input: map[string]any{
				"file_path": filepath.Join(work, "edit.txt"), "old_string": "beta", "new_string": "gamma",
			}}}
		case "write":
			return fakemodel.Answer{Tool: &fakemodel.ToolCall{ID: "toolu_write", Name: "Write", Input: map[string]any{
				"file_path": filepath.Join(work, "write.txt"), "content": "after write\n",
			}}}
		case "read":
			return fakemodel.Answer{Tool: &fakemodel.ToolCall{ID: "toolu_read", Name: "Read", Input: map[string]any{"file_path": filepath.Join(work, "buffer.txt")}}}
		case "hang":
			return fakemodel.Answer{Text: []string{"partial ", "answer ", "never"}, HoldAfter: 2, Release: release}
		}
		return fakemodel.Answer{Text: []string{"unknown prompt: " + r.LastUserText}}
	})
	defer fake.Close()

	home := t.TempDir()
	cmd := exec.Command(node, "--test", "--test-reporter=spec", filepath.Join(dir, "acp.test.mjs"))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"SLUICE_BIN="+bin, "ACP_WORK="+work,
		"SLUICE_HOME="+home, "SLUICE_CONFIG="+filepath.Join(home, "none.json"),
		"ANTHROPIC_BASE_URL="+fake.URL(), "ANTHROPIC_API_KEY=test-key",
		"OPENAI_API_KEY=", "OPENAI_BASE_URL=", "SLUICE_PROVIDER=",
	)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
