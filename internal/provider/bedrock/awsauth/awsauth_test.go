package awsauth

import (
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// setup writes the shared files into a fresh home and returns the
// options that read them with env as the whole environment.
func setup(t *testing.T, config, credentials string, env map[string]string) Options {
	t.Helper()
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".aws"), 0o700); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"config": config, "credentials": credentials} {
		if err := os.WriteFile(filepath.Join(home, ".aws", name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return Options{Home: home, Getenv: func(k string) string { return env[k] }}
}

func retrieve(t *testing.T, o Options) (string, aws.Credentials, error) {
	t.Helper()
	region, p, err := Load(t.Context(), o)
	if err != nil {
		return region, aws.Credentials{}, err
	}
	c, err := p.Retrieve(t.Context())
	return region, c, err
}

const files = `# a comment
[default]
region = eu-west-1
[profile work]
region = us-east-2 ; inline comment
s3 =
  max_concurrent_requests = 10
[profile process]
region = eu-west-1
credential_process = printf '{"Version":1,"AccessKeyId":"AKIDPROC","SecretAccessKey":"proc-secret","SessionToken":"proc-token","Expiration":"2099-01-01T00:00:00Z"}'
[profile mfa]
role_arn = arn:aws:iam::1:role/r
source_profile = default
mfa_serial = arn:aws:iam::1:mfa/me
[profile loop]
role_arn = arn:aws:iam::1:role/r
source_profile = nokeys
[profile nokeys]
role_arn = arn:aws:iam::1:role/r2
source_profile = loop
[not-a-profile]
aws_access_key_id = NOPE
`

const credentialsFile = `[default]
aws_access_key_id = AKIDDEFAULT
aws_secret_access_key = default-secret
[work]
aws_access_key_id = AKIDWORK
aws_secret_access_key = work-secret
aws_session_token = work-token
`

// The environment and the shared files, without the network.
func TestEnvironmentAndFiles(t *testing.T) {
	t.Parallel()
	envKeys := map[string]string{"AWS_ACCESS_KEY_ID": "AKIDENV", "AWS_SECRET_ACCESS_KEY": "env-secret", "AWS_SESSION_TOKEN": "env-token"}
	with := func(m map[string]string, kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range m {
			out[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	for _, c := range []struct {
		name, profile string
		env           map[string]string
		region, key   string
		err           string
	}{
		{"keys in the environment win over the default profile", "", with(envKeys, "AWS_DEFAULT_REGION", "ap-south-1"), "ap-south-1", "AKIDENV", ""},
		{"AWS_REGION over AWS_DEFAULT_REGION", "", with(envKeys, "AWS_REGION", "us-west-1", "AWS_DEFAULT_REGION", "ap-south-1"), "us-west-1", "AKIDENV", ""},
		{"the default profile", "", nil, "eu-west-1", "AKIDDEFAULT", ""},
		{"AWS_PROFILE", "", with(nil, "AWS_PROFILE", "work"), "us-east-2", "AKIDWORK", ""},
		{"a named profile wins over keys in the environment", "work", envKeys, "us-east-2", "AKIDWORK", ""},
		{"credential_process", "process", nil, "eu-west-1", "AKIDPROC", ""},
		{"a missing profile", "nope", nil, "", "", `the AWS profile "nope" is in neither`},
		{"a section that is no profile", "not-a-profile", nil, "", "", "is in neither"},
		{"MFA", "mfa", nil, "", "", "mfa_serial is not supported"},
		{"a source_profile loop without keys", "loop", nil, "", "", "loops back"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			o := setup(t, files, credentialsFile, c.env)
			o.Profile = c.profile
			region, creds, err := retrieve(t, o)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if region != c.region || creds.AccessKeyID != c.key || creds.SecretAccessKey == "" {
				t.Fatalf("region %q, credentials %+v; want %q, %q", region, creds, c.region, c.key)
			}
		})
	}
}

func TestNoRegion(t *testing.T) {
	t.Parallel()
	_, p, err := Load(t.Context(), setup(t, "", credentialsFile, nil))
	if !errors.Is(err, ErrNoRegion) || p == nil {
		t.Fatalf("error %v, provider %v", err, p)
	}
	if _, _, err := Load(t.Context(), setup(t, "[default]\nregion = x\n[oops\n", "", nil)); err == nil || !strings.Contains(err.Error(), "config:3") {
		t.Fatalf("a malformed file: %v", err)
	}
}

// stsServer answers AssumeRole and AssumeRoleWithWebIdentity, recording
// each request's form and Authorization header.
func stsServer(t *testing.T, seen chan<- http.Request) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			t.Error(err)
		}
		seen <- *r
		action := r.PostForm.Get("Action")
		if r.PostForm.Get("RoleArn") == "arn:aws:iam::1:role/denied" {
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprint(w, `<ErrorResponse><Error><Code>AccessDenied</Code><Message>not you</Message></Error></ErrorResponse>`)
			return
		}
		fmt.Fprintf(w, `<%sResponse><%sResult><Credentials><AccessKeyId>ASIA%s</AccessKeyId><SecretAccessKey>s</SecretAccessKey><SessionToken>tok</SessionToken><Expiration>2099-01-02T03:04:05Z</Expiration></Credentials></%sResult><ResponseMetadata><RequestId>1</RequestId></ResponseMetadata></%sResponse>`,
			action, action, strings.ToUpper(action), action, action)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// role_arn with source_profile: AssumeRole signed with the source's keys
// for the profile's region.
func TestAssumeRole(t *testing.T) {
	t.Parallel()
	seen := make(chan http.Request, 1)
	srv := stsServer(t, seen)
	config := `[profile base]
region = eu-central-1
[profile admin]
role_arn = arn:aws:iam::123:role/admin
source_profile = base
role_session_name = me
external_id = ext
duration_seconds = 1800
region = eu-north-1
[profile denied]
role_arn = arn:aws:iam::1:role/denied
source_profile = base
region = eu-north-1
`
	o := setup(t, config, "[base]\naws_access_key_id = AKIDBASE\naws_secret_access_key = base-secret\n", map[string]string{"AWS_ENDPOINT_URL_STS": srv.URL})
	o.Profile = "admin"
	region, creds, err := retrieve(t, o)
	if err != nil {
		t.Fatal(err)
	}
	r := <-seen
	auth := r.Header.Get("Authorization")
	if region != "eu-north-1" || creds.AccessKeyID != "ASIAASSUMEROLE" || !creds.CanExpire || creds.Expires.Year() != 2099 {
		t.Fatalf("region %q, credentials %+v", region, creds)
	}
	if !strings.Contains(auth, "Credential=AKIDBASE/") || !strings.Contains(auth, "/eu-north-1/sts/aws4_request") {
		t.Fatalf("Authorization %q", auth)
	}
	if f := r.PostForm; f.Get("RoleArn") != "arn:aws:iam::123:role/admin" || f.Get("RoleSessionName") != "me" ||
		f.Get("ExternalId") != "ext" || f.Get("DurationSeconds") != "1800" || f.Get("Version") != "2011-06-15" {
		t.Fatalf("form %v", f)
	}

	o.Profile = "denied"
	if _, _, err := retrieve(t, o); err == nil || !strings.Contains(err.Error(), "AccessDenied: not you") {
		t.Fatalf("a refused role: %v", err)
	}
	<-seen

	// credential_source Environment: the role assumed with the
	// environment's keys, for the chain's region.
	config = "[profile ci]\nrole_arn = arn:aws:iam::1:role/ci\ncredential_source = Environment\n"
	o = setup(t, config, "", map[string]string{"AWS_ENDPOINT_URL_STS": srv.URL, "AWS_REGION": "ca-central-1",
		"AWS_ACCESS_KEY_ID": "AKIDENV", "AWS_SECRET_ACCESS_KEY": "env-secret"})
	o.Profile = "ci"
	if _, creds, err := retrieve(t, o); err != nil || creds.AccessKeyID != "ASIAASSUMEROLE" {
		t.Fatalf("credential_source Environment: %+v %v", creds, err)
	}
	if auth := (<-seen).Header.Get("Authorization"); !strings.Contains(auth, "Credential=AKIDENV/") || !strings.Contains(auth, "/ca-central-1/sts/") {
		t.Fatalf("Authorization %q", auth)
	}
}

// A web identity token file in the environment (EKS's IRSA): an unsigned
// AssumeRoleWithWebIdentity with the file's token.
func TestWebIdentity(t *testing.T) {
	t.Parallel()
	seen := make(chan http.Request, 1)
	srv := stsServer(t, seen)
	token := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(token, []byte("jwt-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	o := setup(t, "", "", map[string]string{"AWS_ENDPOINT_URL": srv.URL, "AWS_REGION": "us-west-2",
		"AWS_WEB_IDENTITY_TOKEN_FILE": token, "AWS_ROLE_ARN": "arn:aws:iam::1:role/pod"})
	_, creds, err := retrieve(t, o)
	if err != nil {
		t.Fatal(err)
	}
	r := <-seen
	if creds.AccessKeyID != "ASIAASSUMEROLEWITHWEBIDENTITY" || r.Header.Get("Authorization") != "" ||
		r.PostForm.Get("WebIdentityToken") != "jwt-token" || !strings.HasPrefix(r.PostForm.Get("RoleSessionName"), "aws-go-sdk-") {
		t.Fatalf("credentials %+v, request %v %v", creds, r.Header, r.PostForm)
	}
}

// IAM Identity Center: the cached token of an sso-session, refreshed
// through SSO-OIDC and written back when it has expired.
func TestSSO(t *testing.T) {
	t.Parallel()
	var refreshed map[string]string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/token":
			if err := json.NewDecoder(r.Body).Decode(&refreshed); err != nil {
				t.Error(err)
			}
			fmt.Fprint(w, `{"accessToken":"fresh-token","expiresIn":3600,"refreshToken":"refresh-2"}`)
		case "/federation/credentials":
			if r.Header.Get("X-Amz-Sso_bearer_token") != "fresh-token" || r.URL.Query().Get("account_id") != "111" || r.URL.Query().Get("role_name") != "Dev" {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			fmt.Fprintf(w, `{"roleCredentials":{"accessKeyId":"ASIASSO","secretAccessKey":"sso-secret","sessionToken":"sso-token","expiration":%d}}`,
				time.Now().Add(time.Hour).UnixMilli())
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	config := `[profile dev]
sso_session = corp
sso_account_id = 111
sso_role_name = Dev
region = us-east-1
[sso-session corp]
sso_start_url = https://corp.awsapps.com/start
sso_region = eu-west-1
`
	o := setup(t, config, "", map[string]string{"AWS_ENDPOINT_URL_SSO": srv.URL, "AWS_ENDPOINT_URL_SSO_OIDC": srv.URL, "AWS_PROFILE": "dev"})
	sum := sha1.Sum([]byte("corp"))
	cache := filepath.Join(o.Home, ".aws", "sso", "cache", hex.EncodeToString(sum[:])+".json")
	if err := os.MkdirAll(filepath.Dir(cache), 0o700); err != nil {
		t.Fatal(err)
	}
	expired := `{"accessToken":"old","expiresAt":"2020-01-01T00:00:00Z","refreshToken":"refresh-1","clientId":"cid","clientSecret":"csecret","region":"eu-west-1"}`
	if err := os.WriteFile(cache, []byte(expired), 0o600); err != nil {
		t.Fatal(err)
	}
	_, creds, err := retrieve(t, o)
	if err != nil {
		t.Fatal(err)
	}
	if creds.AccessKeyID != "ASIASSO" || refreshed["refreshToken"] != "refresh-1" || refreshed["grantType"] != "refresh_token" {
		t.Fatalf("credentials %+v, refresh request %v", creds, refreshed)
	}
	b, err := os.ReadFile(cache)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"fresh-token"`) || !strings.Contains(string(b), `"refresh-2"`) || !strings.Contains(string(b), `"region":"eu-west-1"`) {
		t.Fatalf("cache not written back: %s", b)
	}

	if err := os.Remove(cache); err != nil {
		t.Fatal(err)
	}
	if _, _, err := retrieve(t, o); err == nil || !strings.Contains(err.Error(), "aws sso login") {
		t.Fatalf("without a cached token: %v", err)
	}
}

// The container endpoint, by full URI (loopback only over HTTP) with a
// token file, and by relative URI; then the instance metadata service,
// IMDSv2.
func TestContainerAndInstance(t *testing.T) {
	t.Parallel()
	var containerAuth, imdsToken string
	var v1 atomic.Bool // the metadata service refuses IMDSv2's token
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		answer := `{"Code":"Success","AccessKeyId":"ASIA%s","SecretAccessKey":"s","Token":"t","Expiration":"2099-01-01T00:00:00Z"}`
		switch {
		case strings.HasPrefix(r.URL.Path, "/v2/credentials"):
			containerAuth = r.Header.Get("Authorization")
			fmt.Fprintf(w, answer, "CONTAINER")
		case r.URL.Path == "/latest/api/token" && r.Method == http.MethodPut && r.Header.Get("X-Aws-Ec2-Metadata-Token-Ttl-Seconds") != "":
			if v1.Load() {
				w.WriteHeader(http.StatusForbidden)
				return
			}
			fmt.Fprint(w, "imds-session")
		case r.URL.Path == "/latest/meta-data/iam/security-credentials/":
			imdsToken = r.Header.Get("X-Aws-Ec2-Metadata-Token")
			fmt.Fprint(w, "web-role\n")
		case r.URL.Path == "/latest/meta-data/iam/security-credentials/web-role":
			fmt.Fprintf(w, answer, "INSTANCE")
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	o := setup(t, "", "", map[string]string{"AWS_REGION": "us-west-2", "AWS_CONTAINER_CREDENTIALS_FULL_URI": srv.URL + "/v2/credentials",
		"AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE": tokenFile, "AWS_CONTAINER_AUTHORIZATION_TOKEN": "from-env"})
	if _, creds, err := retrieve(t, o); err != nil || creds.AccessKeyID != "ASIACONTAINER" || containerAuth != "from-file" {
		t.Fatalf("full URI: %+v %v; Authorization %q", creds, err, containerAuth)
	}

	r := &resolver{getenv: func(k string) string {
		return map[string]string{"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "/v2/credentials/abc"}[k]
	}, client: http.DefaultClient}
	p, err := r.container()
	if err != nil || p.(*containerProvider).url != ecsEndpoint+"/v2/credentials/abc" {
		t.Fatalf("relative URI: %+v %v", p, err)
	}

	o = setup(t, "", "", map[string]string{"AWS_REGION": "us-west-2", "AWS_CONTAINER_CREDENTIALS_FULL_URI": "http://192.0.2.1/creds"})
	if _, _, err := Load(t.Context(), o); err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Fatalf("a remote plain-HTTP endpoint: %v", err)
	}

	o = setup(t, "", "", map[string]string{"AWS_REGION": "us-west-2", "AWS_EC2_METADATA_SERVICE_ENDPOINT": srv.URL})
	if _, creds, err := retrieve(t, o); err != nil || creds.AccessKeyID != "ASIAINSTANCE" || imdsToken != "imds-session" {
		t.Fatalf("instance: %+v %v; token %q", creds, err, imdsToken)
	}
	v1.Store(true)
	if _, creds, err := retrieve(t, o); err != nil || creds.AccessKeyID != "ASIAINSTANCE" || imdsToken != "" {
		t.Fatalf("instance, IMDSv1: %+v %v; token %q", creds, err, imdsToken)
	}
	o = setup(t, "", "", map[string]string{"AWS_REGION": "us-west-2", "AWS_EC2_METADATA_DISABLED": "true"})
	if _, _, err := retrieve(t, o); err == nil || !strings.Contains(err.Error(), "AWS_EC2_METADATA_DISABLED") {
		t.Fatalf("IMDS disabled: %v", err)
	}
}
