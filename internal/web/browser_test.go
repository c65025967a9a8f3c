package web

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sluicehq/sluice/protocol"
)

// One headless Chromium serves every browser test of the package (a tab
// each); TestMain stops it.
var chrome struct {
	once   sync.Once
	ctx    context.Context
	stop   func()
	err    error
	path   string
	logMu  sync.Mutex
	output strings.Builder
}

// chromiumPath finds the browser: $SLUICE_CHROMIUM, or Debian's chromium
// and its usual relatives on PATH.
func chromiumPath() string {
	if p := os.Getenv("SLUICE_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

type lockedWriter struct{}

func (lockedWriter) Write(p []byte) (int, error) {
	chrome.logMu.Lock()
	defer chrome.logMu.Unlock()
	if chrome.output.Len() < 64<<10 {
		chrome.output.Write(p)
	}
	return len(p), nil
}

// newTab returns the context of a new tab. Without a browser the test is
// skipped, unless SLUICE_REQUIRE_BROWSER is set (CI), where it fails.
func newTab(t *testing.T) *tab {
	t.Helper()
	chrome.once.Do(func() {
		chrome.path = chromiumPath()
		if chrome.path == "" {
			chrome.err = fmt.Errorf("no Chromium found (install Debian's chromium, or set SLUICE_CHROMIUM)")
			return
		}
		dir, err := os.MkdirTemp("", "sluice-chromium-")
		if err != nil {
			chrome.err = err
			return
		}
		// The flags that let Chromium run headless as root on a machine
		// without network, without stalling on refused connections.
		opts := append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath(chrome.path),
			chromedp.NoSandbox,
			chromedp.DisableGPU,
			chromedp.Flag("disable-quic", true),
			chromedp.Flag("no-first-run", true),
			chromedp.Flag("disable-background-networking", true),
			chromedp.Flag("disable-component-update", true),
			chromedp.Flag("disable-sync", true),
			chromedp.UserDataDir(dir),
			chromedp.WindowSize(1100, 1400),
			chromedp.CombinedOutput(lockedWriter{}),
		)
		actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
		bctx, bcancel := chromedp.NewContext(actx)
		// The first run starts the browser, for as long as its context
		// lives: no timeout on it.
		if err := chromedp.Do(bctx); err != nil {
			chrome.err = fmt.Errorf("start %s: %w", chrome.path, err)
		}
		chrome.ctx = bctx
		chrome.stop = func() {
			bcancel()
			acancel()
			os.RemoveAll(dir)
		}
	})
	if chrome.err != nil {
		if requireBrowser() {
			t.Fatalf("browser tests need Chromium: %v\n%s", chrome.err, chrome.output.String())
		}
		t.Skipf("skipping: %v (SLUICE_REQUIRE_BROWSER=1 makes this a failure)", chrome.err)
	}
	ctx, cancel := chromedp.NewContext(chrome.ctx)
	// The first run opens the tab, for as long as ctx lives.
	if err := chromedp.Do(ctx); err != nil {
		cancel()
		t.Fatalf("open a tab: %v", err)
	}
	tb := &tab{t: t, ctx: ctx}
	console := chromedp.Console(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range console {
			if err != nil {
				return
			}
			tb.mu.Lock()
			tb.console = append(tb.console, m)
			tb.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		tb.checkConsole()
	})
	return tb
}

// tab is one browser tab and what its console said.
type tab struct {
	t       *testing.T
	ctx     context.Context
	mu      sync.Mutex
	console []chromedp.ConsoleMessage
}

// do runs actions, failing the test on error.
func (tb *tab) do(actions ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, testTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		tb.t.Fatalf("browser: %v\nconsole:\n%s", err, tb.consoleText())
	}
}

// eval evaluates expr into out.
func (tb *tab) eval(expr string, out any) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, testTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[json.RawMessage](expr))
	if err != nil {
		tb.t.Fatalf("evaluate %s: %v", expr, err)
	}
	if out != nil {
		if err := json.Unmarshal(v, out); err != nil {
			tb.t.Fatalf("evaluate %s: %v", expr, err)
		}
	}
}

// poll waits until the JavaScript expression is truthy.
func (tb *tab) poll(what, expr string) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, testTimeout+5*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(testTimeout))); err != nil {
		tb.t.Fatalf("waiting for %s: %v\nconsole:\n%s", what, err, tb.consoleText())
	}
}

func (tb *tab) consoleText() string {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	var b strings.Builder
	for _, m := range tb.console {
		fmt.Fprintf(&b, "  %s\n", m.String())
	}
	return b.String()
}

// checkConsole fails on any uncaught exception and on any Content Security
// Policy violation: the page must run clean under its own policy.
func (tb *tab) checkConsole() {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	for _, m := range tb.console {
		if m.IsException() || strings.Contains(m.Text, "Content Security Policy") {
			tb.t.Errorf("browser console: %s", m.String())
		}
	}
}

// open loads the page and waits until it holds its session.
func (tb *tab) open(url string) string {
	tb.t.Helper()
	tb.do(chromedp.Navigate(url))
	tb.poll("the page to attach", `window.sluice && window.sluice.connected()`)
	var id string
	tb.eval(`window.sluice.sessionId()`, &id)
	return id
}

// stats reads the page's counters.
func (tb *tab) stats() (s struct{ Snapshots, Resumes, Resyncs int }) {
	tb.t.Helper()
	tb.eval(`window.sluice.stats()`, &s)
	return s
}

// deepEqualJS compares two JSON values as values, in the page.
const deepEqualJS = `(function eq(a, b) {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a), kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  return ka.every((k) => Object.prototype.hasOwnProperty.call(b, k) && eq(a[k], b[k]));
})`

// matches waits until the page holds exactly snap (the reducer's list,
// field for field) and shows what a fresh rendering of snap shows.
func (tb *tab) matches(what string, snap protocol.Snapshot) {
	tb.t.Helper()
	want, err := json.Marshal(snap)
	if err != nil {
		tb.t.Fatal(err)
	}
	expr := fmt.Sprintf(`(() => { const want = %s;
	  return window.sluice.connected() && %s(window.sluice.state(), want) &&
	    window.sluice.renderedText() === window.sluice.freshText(want); })()`, want, deepEqualJS)
	ctx, cancel := context.WithTimeout(tb.ctx, testTimeout+5*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(testTimeout))); err != nil {
		var got json.RawMessage
		tb.eval(`window.sluice.state()`, &got)
		var shown struct{ Live, Fresh string }
		tb.eval(fmt.Sprintf(`({ live: window.sluice.renderedText(), fresh: window.sluice.freshText(%s) })`, want), &shown)
		tb.t.Fatalf("%s: the page does not match getMessages: %v\nwant %s\ngot  %s\nshown %q\nfresh %q\nconsole:\n%s",
			what, err, want, got, shown.Live, shown.Fresh, tb.consoleText())
	}
}

// screenshot saves the page as PNG under $SLUICE_ARTIFACTS (default: the
// test's temporary directory) and returns the file's path.
func (tb *tab) screenshot(name string) string {
	tb.t.Helper()
	dir := os.Getenv("SLUICE_ARTIFACTS")
	if dir == "" {
		dir = tb.t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(tb.ctx, testTimeout)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		tb.t.Fatalf("screenshot: %v", err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		tb.t.Fatal(err)
	}
	tb.t.Logf("screenshot: %s", path)
	return path
}

// type types text into the input box and presses Enter.
func (tb *tab) send(text string) {
	tb.t.Helper()
	tb.do(
		chromedp.SetValue(chromedp.CSS("#input"), text),
		chromedp.SendKeys(chromedp.CSS("#input"), "\r"),
	)
}
