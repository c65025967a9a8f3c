// Package awsauth resolves the AWS region and credentials the way the AWS
// CLI and SDKs do, for Bedrock's SigV4 signatures: environment variables;
// the shared config and credentials files, with AWS_PROFILE; a profile's
// static keys, credential_process, role_arn with source_profile or
// credential_source (STS AssumeRole), web_identity_token_file (STS
// AssumeRoleWithWebIdentity, also from AWS_WEB_IDENTITY_TOKEN_FILE), and
// IAM Identity Center (SSO) through the AWS CLI's cached token, refreshed
// when it has expired; then the ECS/EKS container endpoint and EC2's
// instance metadata service (IMDSv2).
//
// It is written here rather than taken from aws-sdk-go-v2's config
// package, because that package links the STS, SSO, SSO-OIDC and Sign-In
// service clients, whose endpoint and schema tables are built at package
// initialisation: every sluice command, Bedrock in use or not, paid 22
// package inits, 577 KB of allocation and 1.7 MB of peak RSS for them
// (`sluice --version`, measured). This package's only AWS dependencies
// are the aws package's credential types and cache and the SigV4 signer,
// which Bedrock's requests use anyway.
//
// Not covered: MFA-protected roles (mfa_serial, which need a prompt; the
// SDK's chain refused them too, having no prompt), `aws login` sessions
// (login_session) and per-service endpoint sections. The first two are
// reported as an error naming the setting and the way through the AWS CLI
// (credential_process = aws configure export-credentials), so that such a
// profile fails clearly rather than falling through to another source.
package awsauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// Options says where to look; every field is optional.
type Options struct {
	// Region wins over the environment's and the profile's.
	Region string
	// Profile is the shared-config profile to use. Set, it wins over
	// credentials in environment variables (as an SDK's
	// WithSharedConfigProfile does); empty takes AWS_PROFILE, then
	// AWS_DEFAULT_PROFILE, then "default", after those variables.
	Profile string
	// Getenv reads the environment: os.Getenv when nil.
	Getenv func(string) string
	// Home is the user's home directory: os.UserHomeDir's when empty.
	Home string
	// HTTPClient fetches credentials from STS, SSO, the container
	// endpoint and the instance metadata service; http.DefaultClient when
	// nil. Each request has its own timeout.
	HTTPClient *http.Client
	// Now is the clock, for signatures and expiry: time.Now when nil.
	Now func() time.Time
	// RegionOnly resolves the region alone (the caller has credentials,
	// or needs none): Load's provider is then nil, and what the profile
	// says about credentials is not checked.
	RegionOnly bool
}

// ErrNoRegion is returned by Load when neither the options, the
// environment nor the profile name a region.
var ErrNoRegion = errors.New("no AWS region")

// Load resolves the region and the credentials provider from the
// environment and the shared files, without network access: credentials
// are fetched by the provider's Retrieve, and cached until shortly before
// they expire. It fails when the files are unreadable or malformed, when
// a named profile is missing, or when a profile asks for what this
// package does not do. With no region anywhere, it returns the provider
// and ErrNoRegion.
func Load(ctx context.Context, o Options) (region string, creds aws.CredentialsProvider, err error) {
	r, err := newResolver(o)
	if err != nil {
		return "", nil, err
	}
	region = firstOf(o.Region, r.getenv("AWS_REGION"), r.getenv("AWS_DEFAULT_REGION"), r.profile()["region"])
	r.region = region
	if o.RegionOnly {
		if region == "" {
			return "", nil, ErrNoRegion
		}
		return region, nil, nil
	}
	provider, err := r.chain()
	if err != nil {
		return "", nil, err
	}
	cache := aws.NewCredentialsCache(provider, func(c *aws.CredentialsCacheOptions) {
		// As the SDK does for the container endpoint, whose credentials
		// rotate often; the default window (none) for the others.
		if _, ok := provider.(*containerProvider); ok {
			c.ExpiryWindow = 5 * time.Minute
		}
	})
	if region == "" {
		return "", cache, ErrNoRegion
	}
	return region, cache, nil
}

// resolver holds what Load read.
type resolver struct {
	getenv func(string) string
	home   string
	files  sections
	name   string // the profile's name
	named  bool   // the profile was given in Options
	region string // the region Load resolved, for STS
	client *http.Client
	now    func() time.Time
}

func newResolver(o Options) (*resolver, error) {
	r := &resolver{getenv: o.Getenv, home: o.Home, client: o.HTTPClient, now: o.Now}
	if r.getenv == nil {
		r.getenv = os.Getenv
	}
	if r.now == nil {
		r.now = time.Now
	}
	if r.client == nil {
		r.client = http.DefaultClient
	}
	if r.home == "" {
		r.home, _ = os.UserHomeDir()
	}
	r.name, r.named = o.Profile, o.Profile != ""
	if r.name == "" {
		r.name = firstOf(r.getenv("AWS_PROFILE"), r.getenv("AWS_DEFAULT_PROFILE"), "default")
	}
	config, credentials := filePaths(r.getenv, r.home)
	files, err := readFiles(config, credentials)
	if err != nil {
		return nil, err
	}
	r.files = files
	if r.files[r.name] == nil && r.name != "default" {
		return nil, fmt.Errorf("the AWS profile %q is in neither %s nor %s", r.name, config, credentials)
	}
	return r, nil
}

// profile is the chosen profile's settings (empty when "default" is
// absent).
func (r *resolver) profile() map[string]string { return r.files[r.name] }

// chain picks the source as the SDK's default chain does: a named
// profile; keys in the environment; a web identity token file in the
// environment; the profile (AWS_PROFILE or default), whose last resort
// is the container endpoint, then the instance metadata service.
func (r *resolver) chain() (aws.CredentialsProvider, error) {
	switch {
	case r.named:
	case r.envKeys().HasKeys():
		return static(r.envKeys()), nil
	case r.getenv("AWS_WEB_IDENTITY_TOKEN_FILE") != "":
		return r.webIdentity(r.getenv("AWS_WEB_IDENTITY_TOKEN_FILE"), r.getenv("AWS_ROLE_ARN"), r.getenv("AWS_ROLE_SESSION_NAME"))
	}
	return r.fromProfile(r.name, map[string]bool{})
}

// envKeys are the credentials in AWS_ACCESS_KEY_ID (or AWS_ACCESS_KEY),
// AWS_SECRET_ACCESS_KEY (or AWS_SECRET_KEY) and AWS_SESSION_TOKEN.
func (r *resolver) envKeys() aws.Credentials {
	return aws.Credentials{
		AccessKeyID:     firstOf(r.getenv("AWS_ACCESS_KEY_ID"), r.getenv("AWS_ACCESS_KEY")),
		SecretAccessKey: firstOf(r.getenv("AWS_SECRET_ACCESS_KEY"), r.getenv("AWS_SECRET_KEY")),
		SessionToken:    r.getenv("AWS_SESSION_TOKEN"),
		Source:          "environment",
	}
}

// fromProfile is the provider for profile name. seen holds the profiles
// on the way through source_profile, which may name the profile itself
// (its own keys, then its role) but not form a longer cycle.
func (r *resolver) fromProfile(name string, seen map[string]bool) (aws.CredentialsProvider, error) {
	p := r.files[name]
	keys := aws.Credentials{AccessKeyID: p["aws_access_key_id"], SecretAccessKey: p["aws_secret_access_key"],
		SessionToken: p["aws_session_token"], Source: "profile " + name}
	if seen[name] {
		// A profile named as its own source_profile gives its keys.
		if !keys.HasKeys() {
			return nil, fmt.Errorf("AWS profile %q: source_profile loops back to it without its own keys", name)
		}
		return static(keys), nil
	}
	seen[name] = true
	for _, unsupported := range []string{"mfa_serial", "login_session"} {
		if p[unsupported] != "" {
			return nil, fmt.Errorf("AWS profile %q: %s is not supported by sluice; a profile with credential_process = aws configure export-credentials --profile %s --format process can use it through the AWS CLI", name, unsupported, name)
		}
	}
	role := p["role_arn"]
	if p["source_profile"] != "" && p["credential_source"] != "" {
		return nil, fmt.Errorf("AWS profile %q: both source_profile and credential_source are set", name)
	}
	if (p["source_profile"] != "" || p["credential_source"] != "") && role == "" {
		return nil, fmt.Errorf("AWS profile %q: source_profile or credential_source without role_arn", name)
	}
	var base aws.CredentialsProvider
	var err error
	switch {
	case p["source_profile"] != "":
		src := p["source_profile"]
		if r.files[src] == nil {
			return nil, fmt.Errorf("AWS profile %q: its source_profile %q does not exist", name, src)
		}
		base, err = r.fromProfile(src, seen)
	case keys.HasKeys():
		base = static(keys)
	case p["credential_source"] != "":
		base, err = r.fromSource(name, p["credential_source"])
	case p["web_identity_token_file"] != "":
		return r.webIdentity(p["web_identity_token_file"], role, p["role_session_name"])
	case p["sso_session"] != "" || p["sso_start_url"] != "":
		base, err = r.sso(name, p)
	case p["credential_process"] != "":
		base = &processProvider{command: p["credential_process"]}
	default:
		base, err = r.fromSource(name, "")
	}
	if err != nil || role == "" {
		return base, err
	}
	duration := 0
	if d := p["duration_seconds"]; d != "" {
		if duration, err = strconv.Atoi(d); err != nil {
			return nil, fmt.Errorf("AWS profile %q: duration_seconds %q: %w", name, d, err)
		}
	}
	return &assumeRoleProvider{sts: r.sts(firstOf(p["region"], r.region)), source: aws.NewCredentialsCache(base),
		roleARN: role, sessionName: p["role_session_name"], externalID: p["external_id"], duration: duration}, nil
}

// fromSource is a credential_source (Environment, EcsContainer,
// Ec2InstanceMetadata), or, for "", the container endpoint when one is
// set and otherwise the instance metadata service.
func (r *resolver) fromSource(profile, source string) (aws.CredentialsProvider, error) {
	container := r.getenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI") != "" || r.getenv("AWS_CONTAINER_CREDENTIALS_FULL_URI") != ""
	switch source {
	case "Environment":
		return static(r.envKeys()), nil
	case "EcsContainer":
		if !container {
			return nil, fmt.Errorf("AWS profile %q: credential_source EcsContainer, but neither AWS_CONTAINER_CREDENTIALS_RELATIVE_URI nor AWS_CONTAINER_CREDENTIALS_FULL_URI is set", profile)
		}
		return r.container()
	case "Ec2InstanceMetadata":
		return r.imds(), nil
	case "":
		if container {
			return r.container()
		}
		return r.imds(), nil
	}
	return nil, fmt.Errorf("AWS profile %q: credential_source %q is none of Environment, EcsContainer, Ec2InstanceMetadata", profile, source)
}

// endpoint is a service's URL: AWS_ENDPOINT_URL_<SERVICE>, then
// AWS_ENDPOINT_URL, then def.
func (r *resolver) endpoint(service, def string) string {
	return strings.TrimRight(firstOf(r.getenv("AWS_ENDPOINT_URL_"+service), r.getenv("AWS_ENDPOINT_URL"), def), "/")
}

// static provides fixed credentials.
type static aws.Credentials

func (s static) Retrieve(context.Context) (aws.Credentials, error) {
	if !aws.Credentials(s).HasKeys() {
		return aws.Credentials{}, fmt.Errorf("no keys in the %s", s.Source)
	}
	return aws.Credentials(s), nil
}

func firstOf(v ...string) string {
	for _, s := range v {
		if s != "" {
			return s
		}
	}
	return ""
}
