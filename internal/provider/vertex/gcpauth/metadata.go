package gcpauth

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"
)

// newMetadataClient is a client for the metadata server: never through a
// proxy, and quickly given up off Google Cloud, where the address may be
// blackholed (the timeouts of Google's metadata package). It is made when
// needed, not at package initialisation, which every command pays.
func newMetadataClient() *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			DialContext:           (&net.Dialer{Timeout: 2 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			ResponseHeaderTimeout: 2 * time.Second,
			IdleConnTimeout:       60 * time.Second,
		},
		Timeout: 5 * time.Second,
	}
}

// metadataHost is the metadata server's host: GCE_METADATA_HOST, or the
// documented address.
func (d *detector) metadataHost() string {
	if h := d.getenv("GCE_METADATA_HOST"); h != "" {
		return h
	}
	return d.mdIP
}

// onGCE reports whether this machine is on Google Cloud, as Google's
// metadata package decides: GCE_METADATA_HOST set says so; otherwise the
// metadata address answering with Metadata-Flavor: Google, or
// metadata.google.internal resolving to it. Off Google Cloud the first
// probe to finish decides; when the BIOS names Google, either probe saying
// yes within 5 s does.
func (d *detector) onGCE() bool {
	d.mdClient = newMetadataClient()
	if d.getenv("GCE_METADATA_HOST") != "" {
		return true
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res := make(chan bool, 2)
	go func() {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+d.mdIP, nil)
		if err != nil {
			res <- false
			return
		}
		resp, err := d.mdClient.Do(req)
		if err != nil {
			res <- false
			return
		}
		resp.Body.Close()
		res <- resp.Header.Get("Metadata-Flavor") == "Google"
	}()
	go func() {
		addrs, err := net.DefaultResolver.LookupHost(ctx, "metadata.google.internal.")
		res <- err == nil && slices.Contains(addrs, d.mdIP)
	}()
	if !d.biosSaysGoogle() {
		return <-res
	}
	if <-res {
		return true
	}
	t := time.NewTimer(5 * time.Second)
	defer t.Stop()
	select {
	case ok := <-res:
		return ok
	case <-t.C:
		return false
	}
}

// biosSaysGoogle reports whether the machine's product name is Google's
// (Linux only; elsewhere the file is absent).
func (d *detector) biosSaysGoogle() bool {
	b, _ := os.ReadFile(d.dmi)
	name := strings.TrimSpace(string(b))
	return name == "Google" || name == "Google Compute Engine"
}

// metadataToken asks the metadata server for the default service
// account's token.
func (d *detector) metadataToken(ctx context.Context) (Token, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	u := "http://" + d.metadataHost() + "/computeMetadata/v1/instance/service-accounts/default/token?scopes=" + url.QueryEscape(Scope)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return Token{}, err
	}
	req.Header.Set("Metadata-Flavor", "Google")
	var res struct {
		AccessToken string `json:"access_token"`
		ExpiresIn   int64  `json:"expires_in"`
	}
	if err := d.do(d.mdClient, req, &res); err != nil {
		return Token{}, err
	}
	if res.AccessToken == "" || res.ExpiresIn == 0 {
		return Token{}, errors.New("metadata server: incomplete token")
	}
	return Token{Value: res.AccessToken, Expiry: d.now().Add(time.Duration(res.ExpiresIn) * time.Second)}, nil
}
