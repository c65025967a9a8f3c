package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"

	"github.com/sluicehq/sluice/internal/cli"
	"github.com/sluicehq/sluice/internal/gctune"
	"github.com/sluicehq/sluice/internal/profdump"
	"github.com/sluicehq/sluice/internal/web"
	"github.com/sluicehq/sluice/session"
)

func init() {
	register("serve", "serve a web page and the host protocol over WebSocket on 127.0.0.1", serveMain)
}

// serveHeapFloor is the heap a server lets grow before it collects, unless
// GOGC is set. Its live heap is small (≈3 MB for a cluster node streaming
// 20 sessions) and it allocates for every delta to every client, so at Go's
// default goal, twice the live heap, it collected several times a second
// (18–19 cycles per node in one clusterload round), and the slowest deltas
// were those that met a collection: its stop-the-world pauses and mark
// assists, on a machine nodes, NATS and PostgreSQL share. A floor rather
// than a higher GOGC keeps a large live heap at the default's twice.
const serveHeapFloor = 32 << 20

// serveMain runs the host protocol's server behind the web face until
// interrupted, printing the page's URL (with its token) on stdout.
func serveMain(ctx context.Context, args []string, stdio Stdio) int {
	fs := flag.NewFlagSet("sluice serve", flag.ContinueOnError)
	fs.SetOutput(stdio.Err)
	var af cli.AgentFlags
	af.Register(fs)
	var cf cli.ClusterFlags
	cf.Register(fs)
	port := fs.Int("port", 0, "port on 127.0.0.1 (0: any free port)")
	maxMessage := fs.Int("max-message-bytes", web.DefaultMaxMessageBytes, "largest WebSocket message read; larger ones are answered with an error and skipped")
	verbose := fs.Bool("verbose", false, "log debug messages to stderr")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	fail := func(err error) int {
		fmt.Fprintln(stdio.Err, "sluice serve:", err)
		return 2
	}
	log := newLogger(stdio.Err, *verbose)
	defer gctune.Floor(os.Getenv, serveHeapFloor)()
	stopProfile, err := profdump.Start(os.Getenv)
	if err != nil {
		log.Warn("profiling", "err", err)
	}
	defer stopProfile()
	clustered, err := cf.Resolve(os.Getenv)
	if err != nil {
		return fail(err)
	}
	var node *clusterNode
	var join func(*cli.Setup) (session.Host, error)
	if clustered {
		join = func(setup *cli.Setup) (session.Host, error) {
			node, err = joinCluster(ctx, &cf, setup, log)
			if err != nil {
				return nil, err
			}
			return node.Node, nil
		}
	}
	rs, setup, err := hostServer(ctx, &af, *maxMessage, 0, log, join)
	if err != nil {
		return fail(err)
	}
	defer setup.Close()
	if node != nil {
		defer node.Close()
	}
	srv, err := web.New(web.Options{Token: web.NewToken(), RPC: rs, MaxMessageBytes: *maxMessage, Logger: log})
	if err != nil {
		rs.Close()
		return fail(err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(*port))
	serveErr := srv.ListenAndServe(ctx, addr, func(url string) { fmt.Fprintln(stdio.Out, url) })
	closeErr := rs.Close()
	if serveErr != nil {
		log.Error("serving", "err", serveErr)
		return 1
	}
	if closeErr != nil {
		log.Error("closing the sessions", "err", closeErr)
		return 1
	}
	return 0
}
