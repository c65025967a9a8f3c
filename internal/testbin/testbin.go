// Package testbin gives tests the real sluice binary, built once per test run.
//
// scripts/test.sh builds cmd/sluice once and exports its path as SLUICE_BIN,
// so the packages that run the binary (rpc transcripts, the pseudo-terminal
// test, print-mode and ACP clients) share one build instead of each linking
// its own: on a loaded 2-core machine those builds were what ran tests past
// their timeouts. Without SLUICE_BIN (go test in one package by hand) the
// binary is built once per test process.
package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// Env names the variable holding a prebuilt binary's path.
const Env = "SLUICE_BIN"

var (
	once sync.Once
	bin  string // the binary's path once built or found
	dir  string // the temporary directory holding a binary built here
	err  error  // why the binary could not be had
)

// Path returns the binary's path, building it on first use when SLUICE_BIN
// is not set.
func Path() (string, error) {
	once.Do(func() {
		if p := os.Getenv(Env); p != "" {
			if _, statErr := os.Stat(p); statErr != nil {
				err = fmt.Errorf("%s=%s: %w", Env, p, statErr)
				return
			}
			bin, err = filepath.Abs(p)
			return
		}
		dir, err = os.MkdirTemp("", "sluice-testbin")
		if err != nil {
			return
		}
		bin = filepath.Join(dir, "sluice")
		// CGO_ENABLED=0 as scripts/build.sh builds a release.
		build := exec.Command("go", "build", "-o", bin, "github.com/sluicehq/sluice/cmd/sluice")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		out, buildErr := build.CombinedOutput()
		if buildErr != nil {
			err = fmt.Errorf("go build ./cmd/sluice: %v\n%s", buildErr, out)
		}
	})
	return bin, err
}

// Sluice returns the binary's path or fails the test.
func Sluice(t testing.TB) string {
	t.Helper()
	p, err := Path()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Cleanup removes a binary this process built; TestMain calls it after the
// tests. A binary named by SLUICE_BIN is left alone.
func Cleanup() {
	if dir != "" {
		os.RemoveAll(dir)
	}
}
