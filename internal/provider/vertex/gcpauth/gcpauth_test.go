package gcpauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/provider/vertex/gcpauth/gcpauthtest"
)

// clock is a settable time.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// writeJSON writes v as the file name in dir.
func writeJSON(t *testing.T, dir, name string, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func noEnv(string) string { return "" }

// A service account's file, named by Options.File or by
// GOOGLE_APPLICATION_CREDENTIALS, with a PKCS #8 or #1 key: the token is
// cached, shared by concurrent callers, and replaced shortly before it
// expires.
func TestServiceAccount(t *testing.T) {
	t.Parallel()
	ts := &gcpauthtest.TokenServer{T: t, Scope: Scope}
	srv := httptest.NewServer(ts)
	defer srv.Close()
	for _, pkcs1 := range []bool{false, true} {
		ts.Issued.Store(0)
		path := writeJSON(t, t.TempDir(), "sa.json", gcpauthtest.ServiceAccount(srv.URL+"/token", pkcs1))
		clk := &clock{t: time.Unix(1_700_000_000, 0)}
		for i, o := range []Options{
			{File: path, Getenv: noEnv, Now: clk.now},
			{Getenv: func(k string) string { return map[string]string{"GOOGLE_APPLICATION_CREDENTIALS": path}[k] }, Now: clk.now},
		} {
			c, err := Detect(o)
			if err != nil {
				t.Fatal(err)
			}
			if c.Type != "service_account" {
				t.Errorf("type %q", c.Type)
			}
			var wg sync.WaitGroup
			for range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if _, err := c.Token(context.Background()); err != nil {
						t.Error(err)
					}
				}()
			}
			wg.Wait()
			if n := ts.Issued.Load(); n != int32(2*i+1) {
				t.Fatalf("pkcs1 %v, options %d: %d tokens issued for 8 callers", pkcs1, i, n)
			}
			clk.add(time.Hour - 3*time.Minute) // within the refresh window (3m45s)
			tok, err := c.Token(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if want := fmt.Sprintf("tok-%d", 2*i+2); tok.Value != want || !tok.Expiry.Equal(clk.now().Add(time.Hour)) {
				t.Errorf("refreshed token %+v, want %s", tok, want)
			}
		}
	}
}

// The file gcloud auth application-default login writes, found in
// CLOUDSDK_CONFIG or under the home directory.
func TestAuthorizedUserWellKnownFile(t *testing.T) {
	t.Parallel()
	ts := &gcpauthtest.TokenServer{T: t, Scope: Scope}
	var mu sync.Mutex
	var got string // the path of the last token request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = r.URL.Path
		mu.Unlock()
		ts.ServeHTTP(w, r)
	}))
	defer srv.Close()
	home, cfg := t.TempDir(), t.TempDir()
	writeJSON(t, home, ".config/gcloud/application_default_credentials.json", gcpauthtest.AuthorizedUser(srv.URL+"/home"))
	writeJSON(t, cfg, "application_default_credentials.json", gcpauthtest.AuthorizedUser(srv.URL+"/cloudsdk"))
	for _, tt := range []struct {
		env  map[string]string
		path string
	}{
		{nil, "/home"},
		{map[string]string{"CLOUDSDK_CONFIG": cfg}, "/cloudsdk"},
	} {
		c, err := Detect(Options{Getenv: func(k string) string { return tt.env[k] }, Home: home})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Token(context.Background())
		mu.Lock()
		asked := got
		mu.Unlock()
		if err != nil || c.Type != "authorized_user" || asked != tt.path {
			t.Errorf("%v: %s asked, type %s: %v", tt.env, asked, c.Type, err)
		}
	}
}

// An impersonated service account: the source's token asks IAM
// Credentials for the target's.
func TestImpersonation(t *testing.T) {
	t.Parallel()
	ts := &gcpauthtest.TokenServer{T: t, Scope: Scope}
	mux := http.NewServeMux()
	mux.Handle("/token", ts)
	var asked atomic.Int32
	mux.HandleFunc("POST /v1/projects/-/serviceAccounts/{sa}", func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		var body struct {
			Delegates []string
			Scope     []string
			Lifetime  string
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			t.Error(err)
		}
		if r.PathValue("sa") != "target@proj.iam.gserviceaccount.com:generateAccessToken" || r.Header.Get("Authorization") != "Bearer tok-1" ||
			len(body.Scope) != 1 || body.Scope[0] != Scope || len(body.Delegates) != 1 || body.Lifetime != "3600s" {
			t.Errorf("generateAccessToken %s %q %+v", r.URL.Path, r.Header.Get("Authorization"), body)
		}
		fmt.Fprintf(w, `{"accessToken":"target-token","expireTime":%q}`, time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	path := writeJSON(t, t.TempDir(), "imp.json", map[string]any{
		"type":                              "impersonated_service_account",
		"service_account_impersonation_url": srv.URL + "/v1/projects/-/serviceAccounts/target@proj.iam.gserviceaccount.com:generateAccessToken",
		"delegates":                         []string{"projects/-/serviceAccounts/mid@proj.iam.gserviceaccount.com"},
		"source_credentials":                gcpauthtest.AuthorizedUser(srv.URL + "/token"),
	})
	c, err := Detect(Options{File: path, Getenv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		tok, err := c.Token(context.Background())
		if err != nil || tok.Value != "target-token" {
			t.Fatalf("%+v, %v", tok, err)
		}
	}
	if asked.Load() != 1 || ts.Issued.Load() != 1 {
		t.Errorf("%d impersonations, %d source tokens", asked.Load(), ts.Issued.Load())
	}
}

// With no file, on Google Cloud (GCE_METADATA_HOST says so): the metadata
// server's default service account.
func TestMetadataServer(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Metadata-Flavor") != "Google" || r.URL.Path != "/computeMetadata/v1/instance/service-accounts/default/token" || r.URL.Query().Get("scopes") != Scope {
			t.Errorf("metadata request %s %v", r.URL, r.Header)
			http.Error(w, "no", http.StatusForbidden)
			return
		}
		w.Header().Set("Metadata-Flavor", "Google")
		w.Write([]byte(`{"access_token":"gce-token","expires_in":3599,"token_type":"Bearer"}`))
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	c, err := Detect(Options{Getenv: func(k string) string { return map[string]string{"GCE_METADATA_HOST": host}[k] }, Home: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := c.Token(context.Background())
	if err != nil || tok.Value != "gce-token" || c.Type != "metadata" {
		t.Fatalf("%+v %s: %v", tok, c.Type, err)
	}
}

// Off Google Cloud, with no file: ErrNotFound, decided by the probe of the
// metadata address (here one that refuses at once).
func TestNotFound(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	addr := strings.TrimPrefix(srv.URL, "http://")
	srv.Close()
	start := time.Now()
	_, err := Detect(Options{Getenv: noEnv, Home: t.TempDir(), metadataIP: addr, productName: filepath.Join(t.TempDir(), "absent")})
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("err = %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
	// A metadata address answering without Metadata-Flavor is not Google's.
	srv = httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	d := newDetector(Options{Getenv: noEnv, metadataIP: strings.TrimPrefix(srv.URL, "http://"), productName: filepath.Join(t.TempDir(), "absent")})
	if d.onGCE() {
		t.Error("on GCE")
	}
	d.mdClient.CloseIdleConnections()
}

// Files this package cannot use fail clearly, naming what does work, and
// never show the key.
func TestUnsupportedAndBroken(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sa := gcpauthtest.ServiceAccount("http://127.0.0.1:1/token", false)
	sa["private_key"] = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"
	for _, tt := range []struct {
		content any
		want    string
	}{
		{map[string]any{"type": "external_account", "audience": "//iam.googleapis.com/x"}, `"external_account" is not supported: use a service_account key, authorized_user`},
		{map[string]any{"type": "impersonated_service_account", "service_account_impersonation_url": "http://x", "source_credentials": map[string]string{"type": "external_account"}}, `source_credentials: credential type "external_account"`},
		{map[string]any{"type": "gdch_service_account"}, "CLAUDE_CODE_SKIP_VERTEX_AUTH"},
		{map[string]any{"project_id": "p"}, "no credential type"},
		{sa, "private_key"},
		{"not an object", "cannot unmarshal"},
	} {
		path := writeJSON(t, dir, "f.json", tt.content)
		_, err := Detect(Options{File: path, Getenv: noEnv})
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%v: %v, want %q", tt.content, err, tt.want)
		}
	}
	if _, err := Detect(Options{File: filepath.Join(dir, "absent.json"), Getenv: noEnv}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("absent file: %v", err)
	}
}

// A refused grant is an error carrying the endpoint's words, not the key.
func TestTokenRefused(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		w.Write([]byte(`{"error":"invalid_grant","error_description":"Invalid JWT Signature."}`))
	}))
	defer srv.Close()
	path := writeJSON(t, t.TempDir(), "sa.json", gcpauthtest.ServiceAccount(srv.URL+"/token", false))
	c, err := Detect(Options{File: path, Getenv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Token(context.Background())
	if err == nil || !strings.Contains(err.Error(), "400 Bad Request: invalid_grant: Invalid JWT Signature.") || strings.Contains(err.Error(), "PRIVATE KEY") {
		t.Fatalf("err = %v", err)
	}
}
