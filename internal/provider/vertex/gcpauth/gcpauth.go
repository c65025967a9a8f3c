// Package gcpauth finds Google's Application Default Credentials and turns
// them into OAuth access tokens for the cloud-platform scope, the way
// Google's client libraries do: the JSON file GOOGLE_APPLICATION_CREDENTIALS
// names, else gcloud's well-known file
// ($CLOUDSDK_CONFIG/application_default_credentials.json, by default under
// ~/.config/gcloud), else, when running on Google Cloud (Compute Engine,
// Cloud Run, GKE, ...), the metadata server's default service account. A
// file may hold a service_account (its key signs an RS256 JWT bearer grant
// sent to its token_uri), an authorized_user (what `gcloud auth
// application-default login` writes: a refresh-token grant) or an
// impersonated_service_account (the source credentials' token asks IAM
// Credentials' generateAccessToken for the target account's).
//
// It is written here rather than taken from cloud.google.com/go/auth's
// credentials package, because that package links every credential type
// Google knows (workload identity federation with its AWS, Azure and
// executable sources, downscoping, regional access boundaries, mTLS
// through googleapis/enterprise-certificate-proxy, which brings net/rpc
// and, for its debug page, html/template): every sluice command, Vertex AI
// in use or not, paid 14 package inits, 94 KB of allocation at init,
// 0.86 MB of binary and 0.7 MB of peak RSS for them (`sluice --version`:
// 207 → 193 inits, 17.3 → 16.6 MB, medians of 15 runs). This package uses
// the standard library alone.
//
// Not covered: external_account (workload identity federation),
// external_account_authorized_user and gdch_service_account files, and
// mTLS-bound tokens. Such a file is reported as an error naming its type
// and the types that work, so that it fails clearly rather than falling
// through to another source.
package gcpauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"
)

// Scope is the OAuth scope asked for: Vertex AI's predictions need it.
const Scope = "https://www.googleapis.com/auth/cloud-platform"

// expiryDelta is how long before its expiry a token is replaced, as
// Google's libraries do (3m45s), so that a request never carries a token
// that expires on the way.
const expiryDelta = 225 * time.Second

// requestTimeout bounds one request to a token endpoint, the IAM
// Credentials API or the metadata server.
const requestTimeout = 30 * time.Second

// Token is an OAuth access token.
type Token struct {
	Value string
	// Expiry is when the token stops working; zero if it does not say.
	Expiry time.Time
}

// TokenSource gives access tokens.
type TokenSource interface {
	Token(ctx context.Context) (Token, error)
}

// Options says where to look; every field is optional.
type Options struct {
	// File is the credentials file to read, winning over the search.
	File string
	// Getenv reads the environment: os.Getenv when nil.
	Getenv func(string) string
	// Home is the user's home directory: os.UserHomeDir's when empty.
	Home string
	// HTTPClient sends the token and IAM requests; http.DefaultClient
	// when nil. The metadata server is asked through a client of this
	// package's, with short timeouts and no proxy. Each request has its
	// own timeout.
	HTTPClient *http.Client
	// Now is the clock, for JWTs and expiry: time.Now when nil.
	Now func() time.Time

	// metadataIP is where the Compute Engine check looks when
	// GCE_METADATA_HOST is not set (tests point it elsewhere);
	// productName is the file whose content says the machine is one of
	// Google's.
	metadataIP, productName string
}

// Credentials are the detected credentials. They cache their token and
// fetch a new one shortly before it expires; they are safe for concurrent
// use, and concurrent callers wait for one fetch.
type Credentials struct {
	// Type is where the tokens come from: the file's type
	// ("service_account", "authorized_user",
	// "impersonated_service_account") or "metadata".
	Type string

	fetch func(context.Context) (Token, error)
	now   func() time.Time
	mu    sync.Mutex
	tok   Token
}

// Token returns a valid access token, fetching one when the cached one is
// missing or about to expire.
func (c *Credentials) Token(ctx context.Context) (Token, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tok.Value != "" && (c.tok.Expiry.IsZero() || c.now().Add(expiryDelta).Before(c.tok.Expiry)) {
		return c.tok, nil
	}
	tok, err := c.fetch(ctx)
	if err != nil {
		return Token{}, err
	}
	c.tok = tok
	return tok, nil
}

// ErrNotFound is returned by Detect when there are no credentials
// anywhere.
var ErrNotFound = errors.New("no Google Application Default Credentials found; see https://cloud.google.com/docs/authentication/external/set-up-adc")

// Detect finds the credentials, reading files and, when there is no file,
// checking whether this is a Google Cloud machine (which can take up to a
// few seconds off Google Cloud when the network blackholes the metadata
// address). Tokens are fetched by Token.
func Detect(o Options) (*Credentials, error) {
	d := newDetector(o)
	if o.File != "" {
		return d.fromFile(o.File)
	}
	if f := d.getenv("GOOGLE_APPLICATION_CREDENTIALS"); f != "" {
		return d.fromFile(f)
	}
	if b, err := os.ReadFile(d.wellKnownFile()); err == nil {
		return d.fromJSON(b)
	}
	if d.onGCE() {
		return d.credentials("metadata", d.metadataToken), nil
	}
	return nil, ErrNotFound
}

// detector holds the options, defaults filled in.
type detector struct {
	getenv func(string) string
	home   string
	client *http.Client
	now    func() time.Time
	mdIP   string
	dmi    string
	// mdClient asks the metadata server; onGCE makes it.
	mdClient *http.Client
}

func newDetector(o Options) *detector {
	d := &detector{getenv: o.Getenv, home: o.Home, client: o.HTTPClient, now: o.Now, mdIP: o.metadataIP, dmi: o.productName}
	if d.getenv == nil {
		d.getenv = os.Getenv
	}
	if d.client == nil {
		d.client = http.DefaultClient
	}
	if d.now == nil {
		d.now = time.Now
	}
	if d.mdIP == "" {
		d.mdIP = "169.254.169.254"
	}
	if d.dmi == "" {
		d.dmi = "/sys/class/dmi/id/product_name"
	}
	return d
}

func (d *detector) credentials(typ string, fetch func(context.Context) (Token, error)) *Credentials {
	return &Credentials{Type: typ, fetch: fetch, now: d.now}
}

// wellKnownFile is where gcloud auth application-default login writes.
func (d *detector) wellKnownFile() string {
	const name = "application_default_credentials.json"
	if dir := d.getenv("CLOUDSDK_CONFIG"); dir != "" {
		return filepath.Join(dir, name)
	}
	if runtime.GOOS == "windows" {
		return filepath.Join(d.getenv("APPDATA"), "gcloud", name)
	}
	home := d.home
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	return filepath.Join(home, ".config", "gcloud", name)
}

// fromFile reads a credentials file of the user's.
func (d *detector) fromFile(path string) (*Credentials, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c, err := d.fromJSON(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// withTimeout bounds one request.
func withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, requestTimeout)
}
