package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/nats-io/nats.go"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/internal/cli"
	"github.com/sluicehq/sluice/internal/cluster"
	"github.com/sluicehq/sluice/store/pgstore"
)

// clusterNode is this process as a node of a cluster, and the connections
// it holds to the engines.
type clusterNode struct {
	*cluster.Node
	nc *nats.Conn
	pg *pgstore.Store
}

// joinCluster connects to NATS and PostgreSQL and starts this node. The
// sessions are stored in PostgreSQL from then on (setup's store is
// replaced), their events in JetStream.
func joinCluster(ctx context.Context, cf *cli.ClusterFlags, setup *cli.Setup, log *slog.Logger) (*clusterNode, error) {
	cf.WarnCommandLine(log)
	natsOpts, err := cf.NATSOptions(os.Getenv, log)
	if err != nil {
		return nil, fmt.Errorf("cluster: NATS: %w", err)
	}
	pg, err := pgstore.Open(ctx, cf.Postgres)
	if err != nil {
		// The DSN may hold a password: it is not repeated here.
		return nil, fmt.Errorf("cluster: PostgreSQL: %w", err)
	}
	nc, err := nats.Connect(cf.NATS, append(natsOpts, nats.Name("sluice "+cf.NodeID), nats.MaxReconnects(-1))...)
	if err != nil {
		pg.Close()
		return nil, fmt.Errorf("cluster: NATS: %w", err)
	}
	setup.Store, setup.Options.Store = pg, pg
	base := setup.Options
	node, err := cluster.Start(ctx, cluster.Config{
		NodeID: cf.NodeID, NATS: nc, Leases: cluster.PG(pg), LeaseTTL: cf.LeaseTTL, Logger: log,
		Options: func(context.Context, string) (agent.Options, error) { return base, nil },
	})
	if err != nil {
		nc.Close()
		pg.Close()
		return nil, err
	}
	log.Info("joined the cluster", "node", cf.NodeID)
	return &clusterNode{Node: node, nc: nc, pg: pg}, nil
}

// Close stops the node's sessions and closes the connections.
func (c *clusterNode) Close() error {
	err := c.Node.Close()
	c.nc.Close()
	c.pg.Close()
	return err
}
