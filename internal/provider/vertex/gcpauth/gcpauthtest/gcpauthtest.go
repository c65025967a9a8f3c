// Package gcpauthtest is a local Google OAuth token endpoint and the
// credential files that point to it, for the tests of gcpauth and of the
// providers that sign in through it.
package gcpauthtest

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// The service account of ServiceAccount's files.
const (
	Email = "sa@proj.iam.gserviceaccount.com"
	KeyID = "kid1"
)

// Key is the service account's key, made once: RSA generation is slow.
var Key = sync.OnceValue(func() *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	return k
})

// ServiceAccount is a service account's credentials file (as JSON
// fields) whose token_uri is tokenURI, its key in PKCS #1 or PKCS #8.
func ServiceAccount(tokenURI string, pkcs1 bool) map[string]string {
	block := &pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(Key())}
	if !pkcs1 {
		der, err := x509.MarshalPKCS8PrivateKey(Key())
		if err != nil {
			panic(err)
		}
		block = &pem.Block{Type: "PRIVATE KEY", Bytes: der}
	}
	return map[string]string{
		"type": "service_account", "project_id": "proj", "private_key_id": KeyID,
		"private_key": string(pem.EncodeToMemory(block)), "client_email": Email, "token_uri": tokenURI,
	}
}

// AuthorizedUser is a user's credentials file (gcloud's) whose token_uri
// is tokenURI; TokenServer accepts its refresh token.
func AuthorizedUser(tokenURI string) map[string]string {
	return map[string]string{"type": "authorized_user", "client_id": "cid", "client_secret": "csecret", "refresh_token": "rtok", "token_uri": tokenURI}
}

// TokenServer is an OAuth token endpoint. It checks a JWT bearer grant
// (ServiceAccount's: signed with Key, for Scope, valid for an hour) or a
// refresh-token grant (AuthorizedUser's), reports any other request to T
// as an error, and issues Token (tok-N when empty), valid for an hour.
type TokenServer struct {
	T     *testing.T
	Scope string
	Token string
	// Issued counts the tokens issued.
	Issued atomic.Int32
}

func (s *TokenServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		s.T.Error(err)
	}
	switch r.PostForm.Get("grant_type") {
	case "urn:ietf:params:oauth:grant-type:jwt-bearer":
		if err := verifyJWT(r.PostForm.Get("assertion"), "http://"+r.Host+r.URL.Path, s.Scope); err != nil {
			s.T.Errorf("assertion: %v", err)
			http.Error(w, `{"error":"invalid_grant"}`, http.StatusBadRequest)
			return
		}
	case "refresh_token":
		if r.PostForm.Get("refresh_token") != "rtok" || r.PostForm.Get("client_id") != "cid" || r.PostForm.Get("client_secret") != "csecret" {
			s.T.Errorf("refresh grant %v", r.PostForm)
		}
	default:
		s.T.Errorf("grant %v", r.PostForm)
		http.Error(w, `{"error":"unsupported_grant_type"}`, http.StatusBadRequest)
		return
	}
	n := s.Issued.Add(1)
	token := s.Token
	if token == "" {
		token = fmt.Sprintf("tok-%d", n)
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"access_token":%q,"token_type":"Bearer","expires_in":3600}`, token)
}

// verifyJWT checks a service account's assertion: signed with Key under
// KeyID, from Email, for audience and scope, valid for an hour.
func verifyJWT(jwt, audience, scope string) error {
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return fmt.Errorf("%d parts", len(parts))
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return err
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(&Key().PublicKey, crypto.SHA256, sum[:], sig); err != nil {
		return err
	}
	head, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil {
		return err
	}
	var h struct{ Alg, Kid string }
	if err := json.Unmarshal(head, &h); err != nil || h.Alg != "RS256" || h.Kid != KeyID {
		return fmt.Errorf("header %s: %v", head, err)
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return err
	}
	var c struct {
		Iss, Aud, Scope string
		Iat, Exp        int64
	}
	if err := json.Unmarshal(payload, &c); err != nil {
		return err
	}
	if c.Iss != Email || c.Aud != audience || c.Scope != scope || c.Exp-c.Iat != 3600 {
		return fmt.Errorf("claims %+v", c)
	}
	return nil
}
