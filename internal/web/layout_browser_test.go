package web

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/sluicehq/sluice/model"
	"github.com/sluicehq/sluice/model/modeltest"
	"github.com/sluicehq/sluice/protocol"
	"github.com/sluicehq/sluice/wire"
)

// screenshots names the directory TestBrowserLayout writes the page's
// screenshots to (docs/screenshots is where the repository keeps them):
//
//	go test ./internal/web -run TestBrowserLayout -screenshots "$PWD/docs/screenshots"
var screenshots = flag.String("screenshots", "", "write the page's screenshots (PNG) into this directory")

// TestBrowserLayout shows a session — reasoning, a tool call, a markdown
// answer with code — and the first screen at a phone's size (390×844) and
// a desktop's (1440×900), in the light and the dark theme, and checks
// that nothing runs off the side and the composer is in view. With
// -screenshots it saves each as PNG.
func TestBrowserLayout(t *testing.T) {
	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "main.go"), []byte("package main\n\nimport \"flag\"\n\nfunc main() {\n\tflag.Parse()\n\trun(flag.Args())\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	answer := "The flags are parsed in `main.go` with the standard `flag` package. Here is the change:\n\n" +
		"```go\nvar verbose = flag.Bool(\"verbose\", false, \"log each step\")\n\nfunc main() {\n\tflag.Parse()\n" +
		"\tif *verbose {\n\t\t// Timestamps to the microsecond.\n\t\tlog.SetFlags(log.Ltime | log.Lmicroseconds)\n\t}\n\trun(flag.Args())\n}\n```\n\n" +
		"- `-verbose` logs each step with its time\n- without it the output stays as it was\n\nTry it with `go run . -verbose`."
	script := modeltest.NewScript(
		modeltest.Response(modeltest.Start("m1"), modeltest.Reasoning(0, "The user wants a verbose flag. First, how are flags parsed?"),
			modeltest.Text(1, "Let me look at how the flags are parsed."),
			modeltest.ToolUse(2, "toolu_1", "Bash", map[string]string{"command": "grep -n 'flag\\.' main.go"}), modeltest.Stop(model.StopToolUse)),
		modeltest.Answer("m2", answer),
	)
	st := newStack(t, script, stackOptions{mode: protocol.ModeBypassPermissions, workDir: work, model: "claude-sonnet-4-6"})
	ctx := context.Background()

	tb := newTab(t)
	shots := []struct {
		name          string
		width, height int64
		dark          bool
		welcome       bool
	}{
		{"welcome-1440x900-light.png", 1440, 900, false, true},
		{"welcome-390x844-dark.png", 390, 844, true, true},
		{"session-1440x900-light.png", 1440, 900, false, false},
		{"session-1440x900-dark.png", 1440, 900, true, false},
		{"session-390x844-light.png", 390, 844, false, false},
		{"session-390x844-dark.png", 390, 844, true, false},
	}
	var id string
	for _, s := range shots {
		scheme := "light"
		if s.dark {
			scheme = "dark"
		}
		tb.do(chromedp.EmulateViewport(s.width, s.height))
		if _, err := chromedp.Call(tb.ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}},
		}); err != nil {
			t.Fatal(err)
		}
		if id == "" {
			id = tb.open(st.pageURL())
		}
		if !s.welcome && !tb.has(`#messages .codeblock`) {
			obs := &observer{client: dial(t, ctx, st.wsURL(), nil), sessionID: id}
			if err := obs.call(ctx, "initialize", map[string]any{"sessionId": id}, &wire.InitializeResult{}); err != nil {
				t.Fatal(err)
			}
			snap := obs.after(func() { tb.send("Add a --verbose flag to the CLI, and show me the change") }, idleIn)
			tb.matches("the session", snap)
		}
		if !s.welcome {
			// The session from its question on, the input box empty (the
			// test's Enter key leaves a line break in it).
			tb.eval(`(() => { const i = document.getElementById('input'); i.value = ''; i.dispatchEvent(new Event('input')); i.blur();
			  document.getElementById('messages').scrollTop = 0; })()`, nil)
		}
		tb.poll("the "+scheme+" theme", fmt.Sprintf(`matchMedia('(prefers-color-scheme: %s)').matches`, scheme))
		var fit struct {
			Page, Bar, Composer bool
			Width               float64
		}
		tb.eval(`(() => { const d = document.documentElement, bar = document.getElementById('bar'),
		    c = document.getElementById('composer').getBoundingClientRect();
		  return { width: innerWidth, page: d.scrollWidth <= innerWidth, bar: bar.scrollWidth <= bar.clientWidth,
		    composer: c.bottom <= innerHeight + 1 && c.top > innerHeight / 3 }; })()`, &fit)
		if !fit.Page || !fit.Bar || !fit.Composer || fit.Width != float64(s.width) {
			t.Errorf("%s: the layout does not fit: %+v", s.name, fit)
		}
		if *screenshots != "" {
			tb.savePNG(filepath.Join(*screenshots, s.name))
		}
	}
}

// has reports whether the page has an element matching selector.
func (tb *tab) has(selector string) bool {
	tb.t.Helper()
	var ok bool
	tb.eval(fmt.Sprintf(`!!document.querySelector(%s)`, jsString(selector)), &ok)
	return ok
}

// savePNG saves what the viewport shows, compressed as far as PNG goes.
func (tb *tab) savePNG(path string) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, testTimeout)
	defer cancel()
	raw, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		tb.t.Fatalf("screenshot: %v", err)
	}
	img, err := png.Decode(bytes.NewReader(raw))
	if err != nil {
		tb.t.Fatal(err)
	}
	var out bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(&out, img); err != nil {
		tb.t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		tb.t.Fatal(err)
	}
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		tb.t.Fatal(err)
	}
	tb.t.Logf("screenshot: %s (%d KB)", path, out.Len()>>10)
}
