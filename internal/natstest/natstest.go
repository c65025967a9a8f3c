// Package natstest runs a NATS server with JetStream inside the calling
// process, on a free loopback port, its store in a directory of the
// caller's: tests and the load command use a real engine, no mock.
package natstest

import (
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Start starts a server storing its streams under dir and returns it once
// it accepts connections. Shutdown stops it.
func Start(dir string) (*server.Server, error) { return StartAt(dir, server.RANDOM_PORT) }

// StartAt is Start on a given port: a test that stopped a server starts
// another on the same port and store, and its clients reconnect to it.
func StartAt(dir string, port int) (*server.Server, error) {
	return start(&server.Options{Port: port}, dir, nil)
}

// StartConfig is Start with the configuration file conf (accounts, users,
// permissions: what a deployment's server reads), its listen address and
// store replaced by a free loopback port and dir. The server logs to log,
// when given (its errors include every permissions violation).
func StartConfig(conf, dir string, log server.Logger) (*server.Server, error) {
	opts, err := server.ProcessConfigFile(conf)
	if err != nil {
		return nil, err
	}
	opts.Port = server.RANDOM_PORT
	return start(opts, dir, log)
}

// StartOptions is Start with the caller's options (an operator's trust
// and account resolver: how a server of JWT accounts is set up), their
// listen address and store replaced by a free loopback port and dir.
func StartOptions(opts *server.Options, dir string, log server.Logger) (*server.Server, error) {
	opts.Port = server.RANDOM_PORT
	return start(opts, dir, log)
}

func start(opts *server.Options, dir string, log server.Logger) (*server.Server, error) {
	opts.Host = "127.0.0.1"
	opts.JetStream, opts.StoreDir = true, dir
	opts.NoLog, opts.NoSigs = log == nil, true
	s, err := server.NewServer(opts)
	if err != nil {
		return nil, err
	}
	if log != nil {
		s.SetLogger(log, false, false)
	}
	go s.Start()
	// Generous: a loaded CI machine may take seconds to start JetStream.
	if !s.ReadyForConnections(2 * time.Minute) {
		s.Shutdown()
		return nil, errors.New("natstest: the NATS server did not become ready")
	}
	return s, nil
}

// URL starts a server for the test, stopped when the test ends, and
// returns its client URL.
func URL(t testing.TB) string {
	t.Helper()
	s, err := Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	return s.ClientURL()
}
