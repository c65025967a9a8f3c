package web

import (
	"context"
	"io"
	"io/fs"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/sluicehq/sluice/model/modeltest"
	"github.com/sluicehq/sluice/wire"
)

func get(t *testing.T, url string, mod func(*http.Request)) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if mod != nil {
		mod(req)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

func TestTokenHostAndHeaders(t *testing.T) {
	t.Parallel()
	st := newStack(t, modeltest.NewScript(), stackOptions{})
	page := get(t, st.pageURL(), nil)
	if page.StatusCode != http.StatusOK {
		t.Fatalf("page with the token: %s", page.Status)
	}
	var cookie *http.Cookie
	for _, c := range page.Cookies() {
		if strings.HasPrefix(c.Name, "sluice_") {
			cookie = c
		}
	}
	if cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode || cookie.Value != st.token {
		t.Fatalf("page cookie %+v, want an HttpOnly SameSite=Strict cookie holding the token", cookie)
	}
	for h, want := range map[string]string{
		"Content-Security-Policy": "script-src 'self'",
		"Referrer-Policy":         "no-referrer",
		"X-Content-Type-Options":  "nosniff",
		"Cache-Control":           "no-store",
	} {
		if got := page.Header.Get(h); !strings.Contains(got, want) {
			t.Errorf("page header %s = %q, want %q in it", h, got, want)
		}
	}

	withCookie := func(r *http.Request) { r.AddCookie(&http.Cookie{Name: cookie.Name, Value: st.token}) }
	wrongCookie := func(r *http.Request) { r.AddCookie(&http.Cookie{Name: cookie.Name, Value: NewToken()}) }
	foreignHost := func(r *http.Request) { r.Host = "attacker.example:80" }
	cases := []struct {
		name string
		path string
		mod  func(*http.Request)
		want int
	}{
		{"page without token", "/", nil, http.StatusUnauthorized},
		{"page with a wrong token", "/?token=" + NewToken(), nil, http.StatusUnauthorized},
		{"page with a wrong cookie", "/", wrongCookie, http.StatusUnauthorized},
		{"page with the cookie", "/", withCookie, http.StatusOK},
		{"asset without token", "/static/app.js", nil, http.StatusUnauthorized},
		{"asset with the cookie", "/static/app.js", withCookie, http.StatusOK},
		{"websocket without token", "/ws", nil, http.StatusUnauthorized},
		{"websocket with a wrong token", "/ws?token=x", nil, http.StatusUnauthorized},
		{"page through a foreign host name", "/?token=" + st.token, foreignHost, http.StatusForbidden},
		{"unknown path", "/nope?token=" + st.token, nil, http.StatusNotFound},
	}
	for _, c := range cases {
		if got := get(t, st.base+c.path, c.mod).StatusCode; got != c.want {
			t.Errorf("%s: status %d, want %d", c.name, got, c.want)
		}
	}
	js := get(t, st.base+"/static/reducer.js", withCookie)
	if ct := js.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/javascript") {
		t.Errorf("module served as %q", ct)
	}
}

func TestWebSocketOrigin(t *testing.T) {
	t.Parallel()
	st := newStack(t, modeltest.NewScript(), stackOptions{})
	ctx := context.Background()
	cases := []struct {
		origin string
		ok     bool
	}{
		{"", true}, // not a browser
		{st.goBase, true},
		{"http://attacker.example", false},
		{"null", false},
	}
	for _, c := range cases {
		h := http.Header{}
		if c.origin != "" {
			h.Set("Origin", c.origin)
		}
		conn, resp, err := websocket.Dial(ctx, st.wsURL(), &websocket.DialOptions{HTTPHeader: h})
		if c.ok != (err == nil) {
			t.Errorf("origin %q: err %v, want ok %v", c.origin, err, c.ok)
		}
		if err == nil {
			conn.CloseNow()
		} else if resp != nil && resp.StatusCode != http.StatusForbidden {
			t.Errorf("origin %q: status %d, want 403", c.origin, resp.StatusCode)
		}
	}
}

// TestBadInputKeepsTheConnection: a message that is not JSON and one over
// the size limit are answered with errors, and the connection goes on.
func TestBadInputKeepsTheConnection(t *testing.T) {
	t.Parallel()
	st := newStack(t, modeltest.NewScript(), stackOptions{maxMsg: 1024})
	ctx := context.Background()
	cl := dial(t, ctx, st.wsURL(), nil)
	for _, msg := range []string{"not json", `{"jsonrpc":"2.0","id":7,"method":"x","params":"` + strings.Repeat("a", 4096) + `"}`} {
		if err := cl.c.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
			t.Fatal(err)
		}
	}
	var init wire.InitializeResult
	if err := cl.call(ctx, "initialize", map[string]any{}, &init); err != nil {
		t.Fatalf("initialize after bad input: %v", err)
	}
	if init.SessionID == "" || init.Snapshot == nil {
		t.Fatalf("initialize: %+v", init)
	}
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if len(cl.orphans) != 2 || cl.orphans[0].Code != wire.CodeParseError || cl.orphans[1].Code != wire.CodeInvalidRequest {
		t.Errorf("errors %+v, want a parse error and an invalid request", cl.orphans)
	}
}

// The page's scripts build DOM from text only: no HTML parsing sink, no
// string evaluation. (The browser test checks the behaviour; this keeps a
// later edit from reaching for one.)
func TestPageHasNoHTMLSinks(t *testing.T) {
	t.Parallel()
	sinks := regexp.MustCompile(`\.innerHTML|\.outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function|createContextualFragment|DOMParser|srcdoc`)
	err := fs.WalkDir(staticFiles, "static", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".js") {
			return err
		}
		if strings.HasPrefix(path, "static/vendor/") {
			// Third-party code, pinned (vendor/README.md): the page calls
			// none of its HTML paths (static/highlight.js).
			return nil
		}
		src, err := fs.ReadFile(staticFiles, path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(src), "\n") {
			if m := sinks.FindString(line); m != "" && !strings.HasPrefix(strings.TrimSpace(line), "//") {
				t.Errorf("%s:%d uses %s", path, i+1, m)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
