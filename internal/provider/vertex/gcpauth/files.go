package gcpauth

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// defaultTokenURI is Google's OAuth token endpoint, for files that name
// none.
const defaultTokenURI = "https://oauth2.googleapis.com/token"

// file is a credentials file's fields, of every type this package reads.
type file struct {
	Type string `json:"type"`

	// service_account
	ClientEmail  string `json:"client_email"`
	PrivateKey   string `json:"private_key"`
	PrivateKeyID string `json:"private_key_id"`
	TokenURI     string `json:"token_uri"`

	// authorized_user
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret"`
	RefreshToken string `json:"refresh_token"`

	// impersonated_service_account
	ImpersonationURL string          `json:"service_account_impersonation_url"`
	Delegates        []string        `json:"delegates"`
	Source           json.RawMessage `json:"source_credentials"`
}

// fromJSON builds the credentials a file's content describes.
func (d *detector) fromJSON(b []byte) (*Credentials, error) {
	var f file
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, err
	}
	if f.Type != "impersonated_service_account" {
		fetch, err := d.direct(&f)
		if err != nil {
			return nil, err
		}
		return d.credentials(f.Type, fetch), nil
	}
	if f.ImpersonationURL == "" {
		return nil, errors.New("impersonated_service_account without service_account_impersonation_url")
	}
	var src file
	if err := json.Unmarshal(f.Source, &src); err != nil {
		return nil, fmt.Errorf("impersonated_service_account's source_credentials: %w", err)
	}
	source, err := d.direct(&src)
	if err != nil {
		return nil, fmt.Errorf("impersonated_service_account's source_credentials: %w", err)
	}
	imp := &impersonation{d: d, url: f.ImpersonationURL, delegates: f.Delegates, source: d.credentials(src.Type, source)}
	return d.credentials(f.Type, imp.token), nil
}

// direct is the token fetch of a file that asks a token endpoint itself.
func (d *detector) direct(f *file) (func(context.Context) (Token, error), error) {
	switch f.Type {
	case "service_account":
		key, err := parseKey(f.PrivateKey)
		if err != nil {
			return nil, err
		}
		if f.ClientEmail == "" {
			return nil, errors.New("service_account without client_email")
		}
		sa := &serviceAccount{d: d, email: f.ClientEmail, keyID: f.PrivateKeyID, key: key, tokenURI: first(f.TokenURI, defaultTokenURI)}
		return sa.token, nil
	case "authorized_user":
		if f.RefreshToken == "" || f.ClientID == "" {
			return nil, errors.New("authorized_user without refresh_token or client_id")
		}
		form := url.Values{
			"grant_type":    {"refresh_token"},
			"client_id":     {f.ClientID},
			"client_secret": {f.ClientSecret},
			"refresh_token": {f.RefreshToken},
		}
		uri := first(f.TokenURI, defaultTokenURI)
		return func(ctx context.Context) (Token, error) { return d.grant(ctx, uri, form) }, nil
	case "":
		return nil, errors.New("no credential type (the file's \"type\")")
	}
	return nil, fmt.Errorf("credential type %q is not supported: use a service_account key, authorized_user (gcloud auth application-default login) or impersonated_service_account (gcloud auth application-default login --impersonate-service-account=EMAIL) file, or run on Google Cloud with its metadata server; behind a gateway that adds the token, set CLAUDE_CODE_SKIP_VERTEX_AUTH=1", f.Type)
}

func first(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// parseKey reads a service account's PEM private key, PKCS #8 as Google
// issues them, or PKCS #1.
func parseKey(s string) (*rsa.PrivateKey, error) {
	block, _ := pem.Decode([]byte(s))
	if block == nil {
		return nil, errors.New("service_account's private_key is not PEM")
	}
	if k, err := x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
		if rk, ok := k.(*rsa.PrivateKey); ok {
			return rk, nil
		}
		return nil, errors.New("service_account's private_key is not an RSA key")
	}
	k, err := x509.ParsePKCS1PrivateKey(block.Bytes)
	if err != nil {
		// The parser's error says nothing of the key's content.
		return nil, fmt.Errorf("service_account's private_key: %w", err)
	}
	return k, nil
}

// serviceAccount gets tokens with a JWT bearer grant (RFC 7523) signed by
// the account's key.
type serviceAccount struct {
	d                      *detector
	email, keyID, tokenURI string
	key                    *rsa.PrivateKey
}

func (s *serviceAccount) token(ctx context.Context) (Token, error) {
	now := s.d.now()
	jwt, err := s.jwt(now)
	if err != nil {
		return Token{}, err
	}
	return s.d.grant(ctx, s.tokenURI, url.Values{
		"grant_type": {"urn:ietf:params:oauth:grant-type:jwt-bearer"},
		"assertion":  {jwt},
	})
}

// jwt is the signed assertion, valid for an hour from now.
func (s *serviceAccount) jwt(now time.Time) (string, error) {
	head, err := json.Marshal(map[string]string{"alg": "RS256", "typ": "JWT", "kid": s.keyID})
	if err != nil {
		return "", err
	}
	claims, err := json.Marshal(map[string]any{
		"iss": s.email, "scope": Scope, "aud": s.tokenURI,
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix(),
	})
	if err != nil {
		return "", err
	}
	enc := base64.RawURLEncoding
	signed := enc.EncodeToString(head) + "." + enc.EncodeToString(claims)
	sum := sha256.Sum256([]byte(signed))
	sig, err := rsa.SignPKCS1v15(rand.Reader, s.key, crypto.SHA256, sum[:])
	if err != nil {
		return "", err
	}
	return signed + "." + enc.EncodeToString(sig), nil
}

// grant posts an OAuth grant to a token endpoint.
func (d *detector) grant(ctx context.Context, uri string, form url.Values) (Token, error) {
	var res struct {
		AccessToken string `json:"access_token"`
		ExpiresIn   int64  `json:"expires_in"`
	}
	if err := d.post(ctx, uri, "application/x-www-form-urlencoded", strings.NewReader(form.Encode()), nil, &res); err != nil {
		return Token{}, err
	}
	if res.AccessToken == "" {
		return Token{}, errors.New("token endpoint: no access_token in the answer")
	}
	tok := Token{Value: res.AccessToken}
	if res.ExpiresIn > 0 {
		tok.Expiry = d.now().Add(time.Duration(res.ExpiresIn) * time.Second)
	}
	return tok, nil
}

// impersonation gets the target account's tokens from IAM Credentials
// with the source credentials' token.
type impersonation struct {
	d         *detector
	url       string
	delegates []string
	source    *Credentials
}

func (i *impersonation) token(ctx context.Context) (Token, error) {
	src, err := i.source.Token(ctx)
	if err != nil {
		return Token{}, err
	}
	body, err := json.Marshal(map[string]any{"delegates": i.delegates, "scope": []string{Scope}, "lifetime": "3600s"})
	if err != nil {
		return Token{}, err
	}
	var res struct {
		AccessToken string    `json:"accessToken"`
		ExpireTime  time.Time `json:"expireTime"`
	}
	if err := i.d.post(ctx, i.url, "application/json", bytes.NewReader(body), http.Header{"Authorization": {"Bearer " + src.Value}}, &res); err != nil {
		return Token{}, fmt.Errorf("impersonation: %w", err)
	}
	if res.AccessToken == "" {
		return Token{}, errors.New("impersonation: no accessToken in the answer")
	}
	return Token{Value: res.AccessToken, Expiry: res.ExpireTime}, nil
}

// post sends a request and decodes its JSON answer into out; an answer
// other than 200 is an error carrying what the server said.
func (d *detector) post(ctx context.Context, uri, contentType string, body io.Reader, h http.Header, out any) error {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, uri, body)
	if err != nil {
		return err
	}
	for k, v := range h {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Accept", "application/json")
	return d.do(d.client, req, out)
}

// do sends req and decodes the answer.
func (d *detector) do(client *http.Client, req *http.Request, out any) error {
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %s: %s", req.Method, req.URL.Redacted(), resp.Status, errorText(b))
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%s %s: %w", req.Method, req.URL.Redacted(), err)
	}
	return nil
}

// errorText is what an error answer says: OAuth's error and
// error_description, Google's error.message, or the body itself,
// shortened.
func errorText(b []byte) string {
	var e struct {
		Error       json.RawMessage `json:"error"`
		Description string          `json:"error_description"`
	}
	if json.Unmarshal(b, &e) == nil && len(e.Error) > 0 {
		var code string
		var g struct {
			Message string `json:"message"`
		}
		switch {
		case json.Unmarshal(e.Error, &code) == nil:
			if e.Description != "" {
				return code + ": " + e.Description
			}
			return code
		case json.Unmarshal(e.Error, &g) == nil && g.Message != "":
			return g.Message
		}
	}
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
