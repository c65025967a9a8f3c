package awsauth

import (
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// requestTimeout bounds one credentials request; imdsTimeout the
// instance metadata service's, which off EC2 does not answer at all.
const (
	requestTimeout = 30 * time.Second
	imdsTimeout    = time.Second
)

// maxAnswer bounds a credentials answer's body.
const maxAnswer = 1 << 20

// fetch sends req with a timeout and returns the body of a 2xx answer.
func fetch(ctx context.Context, client *http.Client, req *http.Request, timeout time.Duration, what string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := client.Do(req.WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if resp.StatusCode/100 != 2 {
		return body, &statusError{what: what, status: resp.StatusCode, body: strings.TrimSpace(string(body))}
	}
	return body, nil
}

type statusError struct {
	what   string
	status int
	body   string
}

func (e *statusError) Error() string {
	return fmt.Sprintf("%s: HTTP %d: %.300s", e.what, e.status, e.body)
}

// stsClient calls STS's query API.
type stsClient struct {
	endpoint, region string
	client           *http.Client
	now              func() time.Time
}

// sts is the STS client for region (us-east-1 when none), at
// https://sts.REGION.amazonaws.com or AWS_ENDPOINT_URL_STS.
func (r *resolver) sts(region string) *stsClient {
	if region == "" {
		region = "us-east-1"
	}
	return &stsClient{endpoint: r.endpoint("STS", "https://sts."+region+".amazonaws.com"), region: region, client: r.client, now: r.now}
}

// call posts an action and decodes its <Credentials>. creds signs the
// request (SigV4, service "sts"); the zero value sends it unsigned, as
// AssumeRoleWithWebIdentity is.
func (c *stsClient) call(ctx context.Context, creds aws.Credentials, form url.Values) (aws.Credentials, error) {
	form.Set("Version", "2011-06-15")
	body := []byte(form.Encode())
	req, err := http.NewRequest(http.MethodPost, c.endpoint+"/", bytes.NewReader(body))
	if err != nil {
		return aws.Credentials{}, fmt.Errorf("STS %s: %w", form.Get("Action"), err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	if creds.HasKeys() {
		sum := sha256.Sum256(body)
		if err := v4.NewSigner().SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), "sts", c.region, c.now()); err != nil {
			return aws.Credentials{}, fmt.Errorf("STS %s: signing: %w", form.Get("Action"), err)
		}
	}
	answer, err := fetch(ctx, c.client, req, requestTimeout, "STS "+form.Get("Action"))
	var se *statusError
	if errors.As(err, &se) {
		var e struct {
			Code    string `xml:"Error>Code"`
			Message string `xml:"Error>Message"`
		}
		if xml.Unmarshal(answer, &e) == nil && e.Code != "" {
			se.body = e.Code + ": " + e.Message
		}
	}
	if err != nil {
		return aws.Credentials{}, err
	}
	type keys struct {
		AccessKeyID     string `xml:"AccessKeyId"`
		SecretAccessKey string
		SessionToken    string
		Expiration      time.Time
	}
	var out struct {
		Role     keys `xml:"AssumeRoleResult>Credentials"`
		Identity keys `xml:"AssumeRoleWithWebIdentityResult>Credentials"`
	}
	if err := xml.Unmarshal(answer, &out); err != nil {
		return aws.Credentials{}, fmt.Errorf("STS %s: reading the answer: %w", form.Get("Action"), err)
	}
	k := out.Role
	if form.Get("Action") == "AssumeRoleWithWebIdentity" {
		k = out.Identity
	}
	got := aws.Credentials{AccessKeyID: k.AccessKeyID, SecretAccessKey: k.SecretAccessKey, SessionToken: k.SessionToken,
		CanExpire: !k.Expiration.IsZero(), Expires: k.Expiration, Source: "STS " + form.Get("Action")}
	if !got.HasKeys() {
		return aws.Credentials{}, fmt.Errorf("STS %s: no credentials in the answer", form.Get("Action"))
	}
	return got, nil
}

// sessionName is a role session's name when the profile gives none, as
// the SDK names it.
func sessionName(now time.Time) string { return "aws-go-sdk-" + strconv.FormatInt(now.UnixNano(), 10) }

// assumeRoleProvider assumes a role with a source's credentials.
type assumeRoleProvider struct {
	sts                              *stsClient
	source                           aws.CredentialsProvider
	roleARN, sessionName, externalID string
	duration                         int // seconds; 0 is STS's default
}

func (p *assumeRoleProvider) Retrieve(ctx context.Context) (aws.Credentials, error) {
	src, err := p.source.Retrieve(ctx)
	if err != nil {
		return aws.Credentials{}, fmt.Errorf("the source credentials of role %s: %w", p.roleARN, err)
	}
	form := url.Values{"Action": {"AssumeRole"}, "RoleArn": {p.roleARN},
		"RoleSessionName": {firstOf(p.sessionName, sessionName(p.sts.now()))}}
	if p.externalID != "" {
		form.Set("ExternalId", p.externalID)
	}
	if p.duration > 0 {
		form.Set("DurationSeconds", strconv.Itoa(p.duration))
	}
	return p.sts.call(ctx, src, form)
}

// webIdentity exchanges the token in a file (re-read for every exchange:
// Kubernetes rotates it) for a role's credentials.
func (r *resolver) webIdentity(tokenFile, roleARN, session string) (aws.CredentialsProvider, error) {
	if roleARN == "" {
		return nil, fmt.Errorf("a web identity token file (%s) without a role ARN (AWS_ROLE_ARN or role_arn)", tokenFile)
	}
	sts := r.sts(r.region)
	return credentialsFunc(func(ctx context.Context) (aws.Credentials, error) {
		token, err := os.ReadFile(tokenFile)
		if err != nil {
			return aws.Credentials{}, fmt.Errorf("web identity token: %w", err)
		}
		return sts.call(ctx, aws.Credentials{}, url.Values{"Action": {"AssumeRoleWithWebIdentity"}, "RoleArn": {roleARN},
			"RoleSessionName": {firstOf(session, sessionName(sts.now()))}, "WebIdentityToken": {strings.TrimSpace(string(token))}})
	}), nil
}

type credentialsFunc func(context.Context) (aws.Credentials, error)

func (f credentialsFunc) Retrieve(ctx context.Context) (aws.Credentials, error) { return f(ctx) }

// ssoProvider gets a role's credentials from IAM Identity Center with the
// access token `aws sso login` cached.
type ssoProvider struct {
	cacheFile, region, accountID, roleName string
	portal, oidc                           string // endpoints
	client                                 *http.Client
	now                                    func() time.Time
}

// sso reads a profile's SSO settings: sso_session (whose [sso-session]
// section has sso_start_url and sso_region) or the legacy sso_start_url
// and sso_region in the profile; sso_account_id and sso_role_name.
func (r *resolver) sso(name string, p map[string]string) (aws.CredentialsProvider, error) {
	startURL, region, cacheKey := p["sso_start_url"], p["sso_region"], p["sso_start_url"]
	if s := p["sso_session"]; s != "" {
		sess := r.files["sso-session "+s]
		if sess == nil {
			return nil, fmt.Errorf("AWS profile %q: its sso_session %q has no [sso-session %s] section", name, s, s)
		}
		startURL, region, cacheKey = sess["sso_start_url"], sess["sso_region"], s
	}
	if startURL == "" || region == "" || p["sso_account_id"] == "" || p["sso_role_name"] == "" {
		return nil, fmt.Errorf("AWS profile %q: SSO needs sso_start_url, sso_region, sso_account_id and sso_role_name", name)
	}
	sum := sha1.Sum([]byte(cacheKey))
	return &ssoProvider{
		cacheFile: filepath.Join(r.home, ".aws", "sso", "cache", hex.EncodeToString(sum[:])+".json"),
		region:    region, accountID: p["sso_account_id"], roleName: p["sso_role_name"],
		portal: r.endpoint("SSO", "https://portal.sso."+region+".amazonaws.com"),
		oidc:   r.endpoint("SSO_OIDC", "https://oidc."+region+".amazonaws.com"),
		client: r.client, now: r.now,
	}, nil
}

// ssoToken is the AWS CLI's cached token file; fields this package does
// not know are kept when it writes a refreshed token back.
type ssoToken struct {
	AccessToken  string    `json:"accessToken"`
	ExpiresAt    time.Time `json:"expiresAt"`
	RefreshToken string    `json:"refreshToken,omitempty"`
	ClientID     string    `json:"clientId,omitempty"`
	ClientSecret string    `json:"clientSecret,omitempty"`
}

func (p *ssoProvider) Retrieve(ctx context.Context) (aws.Credentials, error) {
	token, err := p.token(ctx)
	if err != nil {
		return aws.Credentials{}, err
	}
	q := url.Values{"account_id": {p.accountID}, "role_name": {p.roleName}}
	req, err := http.NewRequest(http.MethodGet, p.portal+"/federation/credentials?"+q.Encode(), nil)
	if err != nil {
		return aws.Credentials{}, fmt.Errorf("SSO GetRoleCredentials: %w", err)
	}
	req.Header.Set("X-Amz-Sso_bearer_token", token)
	answer, err := fetch(ctx, p.client, req, requestTimeout, "SSO GetRoleCredentials")
	if err != nil {
		return aws.Credentials{}, err
	}
	var out struct {
		RoleCredentials struct {
			AccessKeyID     string `json:"accessKeyId"`
			SecretAccessKey string `json:"secretAccessKey"`
			SessionToken    string `json:"sessionToken"`
			Expiration      int64  `json:"expiration"` // ms since the epoch
		} `json:"roleCredentials"`
	}
	if err := json.Unmarshal(answer, &out); err != nil {
		return aws.Credentials{}, fmt.Errorf("SSO GetRoleCredentials: %w", err)
	}
	k := out.RoleCredentials
	got := aws.Credentials{AccessKeyID: k.AccessKeyID, SecretAccessKey: k.SecretAccessKey, SessionToken: k.SessionToken,
		CanExpire: true, Expires: time.UnixMilli(k.Expiration), Source: "SSO"}
	if !got.HasKeys() {
		return aws.Credentials{}, errors.New("SSO GetRoleCredentials: no credentials in the answer")
	}
	return got, nil
}

// token is the cached access token, refreshed (and written back, as the
// AWS CLI does) when it expires within 5 minutes and the cache holds a
// refresh token.
func (p *ssoProvider) token(ctx context.Context) (string, error) {
	raw, err := os.ReadFile(p.cacheFile)
	if err != nil {
		return "", fmt.Errorf("SSO: no cached token (run `aws sso login`): %w", err)
	}
	var t ssoToken
	if err := json.Unmarshal(raw, &t); err != nil {
		return "", fmt.Errorf("SSO: the cached token %s: %w", p.cacheFile, err)
	}
	if p.now().Add(5 * time.Minute).Before(t.ExpiresAt) {
		return t.AccessToken, nil
	}
	if t.RefreshToken == "" || t.ClientID == "" || t.ClientSecret == "" {
		return "", errors.New("SSO: the cached token has expired (run `aws sso login`)")
	}
	body, _ := json.Marshal(map[string]string{"clientId": t.ClientID, "clientSecret": t.ClientSecret,
		"grantType": "refresh_token", "refreshToken": t.RefreshToken})
	req, err := http.NewRequest(http.MethodPost, p.oidc+"/token", bytes.NewReader(body))
	if err != nil {
		return "", fmt.Errorf("SSO token refresh: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	answer, err := fetch(ctx, p.client, req, requestTimeout, "SSO token refresh")
	if err != nil {
		return "", fmt.Errorf("%w (run `aws sso login`)", err)
	}
	var out struct {
		AccessToken  string `json:"accessToken"`
		ExpiresIn    int64  `json:"expiresIn"`
		RefreshToken string `json:"refreshToken"`
	}
	if err := json.Unmarshal(answer, &out); err != nil || out.AccessToken == "" {
		return "", fmt.Errorf("SSO token refresh: no token in the answer (%v)", err)
	}
	// Keep the fields we do not know (registration expiry, region, ...).
	var all map[string]any
	if json.Unmarshal(raw, &all) == nil {
		all["accessToken"] = out.AccessToken
		all["expiresAt"] = p.now().Add(time.Duration(out.ExpiresIn) * time.Second).UTC().Format(time.RFC3339)
		if out.RefreshToken != "" {
			all["refreshToken"] = out.RefreshToken
		}
		if b, err := json.Marshal(all); err == nil {
			_ = os.WriteFile(p.cacheFile, b, 0o600) // a failed write costs a refresh next time, no more
		}
	}
	return out.AccessToken, nil
}

// containerProvider fetches from the ECS/EKS credentials endpoint.
type containerProvider struct {
	url, token, tokenFile string
	client                *http.Client
}

// ecsEndpoint is where AWS_CONTAINER_CREDENTIALS_RELATIVE_URI is
// resolved; a variable for the tests.
var ecsEndpoint = "http://169.254.170.2"

// container is the endpoint from AWS_CONTAINER_CREDENTIALS_RELATIVE_URI
// or AWS_CONTAINER_CREDENTIALS_FULL_URI, which over plain HTTP must be a
// loopback or ECS/EKS address (as the SDK requires), with the token of
// AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE or
// AWS_CONTAINER_AUTHORIZATION_TOKEN.
func (r *resolver) container() (aws.CredentialsProvider, error) {
	p := &containerProvider{token: r.getenv("AWS_CONTAINER_AUTHORIZATION_TOKEN"),
		tokenFile: r.getenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"), client: r.client}
	if rel := r.getenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"); rel != "" {
		p.url = ecsEndpoint + rel
		return p, nil
	}
	p.url = r.getenv("AWS_CONTAINER_CREDENTIALS_FULL_URI")
	u, err := url.Parse(p.url)
	if err != nil || u.Hostname() == "" {
		return nil, fmt.Errorf("AWS_CONTAINER_CREDENTIALS_FULL_URI %q is not a URL", p.url)
	}
	if u.Scheme == "http" && !allowedContainerHost(u.Hostname()) {
		return nil, fmt.Errorf("AWS_CONTAINER_CREDENTIALS_FULL_URI %q: plain HTTP is allowed only to a loopback, ECS or EKS address", p.url)
	}
	return p, nil
}

// allowedContainerHost is a loopback address, ECS's 169.254.170.2 or
// EKS's 169.254.170.23 and fd00:ec2::23, or a name that resolves only to
// such addresses.
func allowedContainerHost(host string) bool {
	ok := func(ip net.IP) bool {
		return ip.IsLoopback() || ip.Equal(net.IPv4(169, 254, 170, 2)) || ip.Equal(net.IPv4(169, 254, 170, 23)) ||
			ip.Equal(net.ParseIP("fd00:ec2::23"))
	}
	if ip := net.ParseIP(host); ip != nil {
		return ok(ip)
	}
	addrs, err := net.LookupHost(host)
	if err != nil || len(addrs) == 0 {
		return false
	}
	for _, a := range addrs {
		if ip := net.ParseIP(a); ip == nil || !ok(ip) {
			return false
		}
	}
	return true
}

func (p *containerProvider) Retrieve(ctx context.Context) (aws.Credentials, error) {
	req, err := http.NewRequest(http.MethodGet, p.url, nil)
	if err != nil {
		return aws.Credentials{}, fmt.Errorf("container credentials: %w", err)
	}
	token := p.token
	if p.tokenFile != "" {
		b, err := os.ReadFile(p.tokenFile)
		if err != nil {
			return aws.Credentials{}, fmt.Errorf("container credentials: the authorization token: %w", err)
		}
		token = strings.TrimSpace(string(b))
	}
	if token != "" {
		req.Header.Set("Authorization", token)
	}
	req.Header.Set("Accept", "application/json")
	answer, err := fetch(ctx, p.client, req, requestTimeout, "container credentials")
	if err != nil {
		return aws.Credentials{}, err
	}
	return decodeRoleCredentials(answer, "container credentials")
}

// decodeRoleCredentials reads the JSON the container endpoint and the
// instance metadata service both answer.
func decodeRoleCredentials(answer []byte, what string) (aws.Credentials, error) {
	var out struct {
		Code                               string
		Message                            string
		AccessKeyID                        string `json:"AccessKeyId"`
		SecretAccessKey, Token, Expiration string
	}
	if err := json.Unmarshal(answer, &out); err != nil {
		return aws.Credentials{}, fmt.Errorf("%s: %w", what, err)
	}
	if out.Code != "" && out.Code != "Success" {
		return aws.Credentials{}, fmt.Errorf("%s: %s: %s", what, out.Code, out.Message)
	}
	got := aws.Credentials{AccessKeyID: out.AccessKeyID, SecretAccessKey: out.SecretAccessKey, SessionToken: out.Token, Source: what}
	if out.Expiration != "" {
		t, err := time.Parse(time.RFC3339, out.Expiration)
		if err != nil {
			return aws.Credentials{}, fmt.Errorf("%s: expiration %q: %w", what, out.Expiration, err)
		}
		got.CanExpire, got.Expires = true, t
	}
	if !got.HasKeys() {
		return aws.Credentials{}, fmt.Errorf("%s: no credentials in the answer", what)
	}
	return got, nil
}

// imdsProvider fetches an EC2 instance role's credentials from the
// instance metadata service, with an IMDSv2 session token (falling back
// to IMDSv1 where the token request is refused, as the SDK does).
type imdsProvider struct {
	endpoint string
	disabled bool
	client   *http.Client
}

// imds is the instance metadata service at
// AWS_EC2_METADATA_SERVICE_ENDPOINT or its IPv4 or IPv6 address
// (AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE); AWS_EC2_METADATA_DISABLED
// turns it off.
func (r *resolver) imds() aws.CredentialsProvider {
	def := "http://169.254.169.254"
	if strings.EqualFold(r.getenv("AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE"), "IPv6") {
		def = "http://[fd00:ec2::254]"
	}
	return &imdsProvider{endpoint: strings.TrimRight(firstOf(r.getenv("AWS_EC2_METADATA_SERVICE_ENDPOINT"), def), "/"),
		disabled: strings.EqualFold(r.getenv("AWS_EC2_METADATA_DISABLED"), "true"), client: r.client}
}

func (p *imdsProvider) Retrieve(ctx context.Context) (aws.Credentials, error) {
	if p.disabled {
		return aws.Credentials{}, errors.New("no credentials found (the instance metadata service is disabled by AWS_EC2_METADATA_DISABLED)")
	}
	req, _ := http.NewRequest(http.MethodPut, p.endpoint+"/latest/api/token", nil)
	req.Header.Set("X-Aws-Ec2-Metadata-Token-Ttl-Seconds", "21600")
	token, err := fetch(ctx, p.client, req, imdsTimeout, "instance metadata token")
	var se *statusError
	switch {
	case errors.As(err, &se) && (se.status == http.StatusForbidden || se.status == http.StatusNotFound || se.status == http.StatusMethodNotAllowed):
		token = nil // IMDSv1
	case err != nil:
		return aws.Credentials{}, fmt.Errorf("no credentials found (not on EC2?): %w", err)
	}
	get := func(path string) ([]byte, error) {
		req, _ := http.NewRequest(http.MethodGet, p.endpoint+"/latest/meta-data/iam/security-credentials/"+path, nil)
		if token != nil {
			req.Header.Set("X-Aws-Ec2-Metadata-Token", string(token))
		}
		return fetch(ctx, p.client, req, imdsTimeout, "instance role credentials")
	}
	roles, err := get("")
	if err != nil {
		return aws.Credentials{}, err
	}
	role, _, _ := strings.Cut(strings.TrimSpace(string(roles)), "\n")
	if role == "" {
		return aws.Credentials{}, errors.New("instance role credentials: the instance has no role")
	}
	answer, err := get(url.PathEscape(role))
	if err != nil {
		return aws.Credentials{}, err
	}
	return decodeRoleCredentials(answer, "instance role credentials")
}

// processProvider runs a profile's credential_process, as the AWS CLI
// does: through the shell, its JSON (Version 1) on standard output. Its
// standard input is not sluice's, which may be carrying the session's
// own input (stream-json).
type processProvider struct{ command string }

// processTimeout is the SDK's default for a credential_process.
const processTimeout = time.Minute

func (p *processProvider) Retrieve(ctx context.Context) (aws.Credentials, error) {
	ctx, cancel := context.WithTimeout(ctx, processTimeout)
	defer cancel()
	var cmd *exec.Cmd
	if runtime.GOOS == "windows" {
		cmd = exec.CommandContext(ctx, "cmd.exe", "/C", p.command)
	} else {
		cmd = exec.CommandContext(ctx, "sh", "-c", p.command)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return aws.Credentials{}, fmt.Errorf("credential_process %q: %w: %.300s", p.command, err, strings.TrimSpace(stderr.String()))
	}
	var v struct {
		Version         int
		AccessKeyID     string `json:"AccessKeyId"`
		SecretAccessKey string
		SessionToken    string
		Expiration      *time.Time
	}
	if err := json.Unmarshal(out, &v); err != nil {
		return aws.Credentials{}, fmt.Errorf("credential_process %q: its output: %w", p.command, err)
	}
	if v.Version != 1 {
		return aws.Credentials{}, fmt.Errorf("credential_process %q: Version %d, want 1", p.command, v.Version)
	}
	got := aws.Credentials{AccessKeyID: v.AccessKeyID, SecretAccessKey: v.SecretAccessKey, SessionToken: v.SessionToken, Source: "credential_process"}
	if v.Expiration != nil {
		got.CanExpire, got.Expires = true, *v.Expiration
	}
	if !got.HasKeys() {
		return aws.Credentials{}, fmt.Errorf("credential_process %q: no AccessKeyId and SecretAccessKey in its output", p.command)
	}
	return got, nil
}
