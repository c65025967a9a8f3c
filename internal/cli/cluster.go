package cli

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"time"
)

// ClusterFlags are the flags of cluster mode (sluice serve, sluice relay):
// with a NATS server and a PostgreSQL database the process is one node of
// a cluster; without them, a single process with its sessions in files.
type ClusterFlags struct {
	NATS     string
	Postgres string
	NodeID   string
	LeaseTTL time.Duration

	fs *flag.FlagSet
}

// Register adds the flags to fs.
func (f *ClusterFlags) Register(fs *flag.FlagSet) {
	f.fs = fs
	fs.StringVar(&f.NATS, "nats", "", "cluster mode: URL of a NATS server with JetStream (the sessions' events); settings \"nats\"")
	fs.StringVar(&f.Postgres, "postgres", "", "cluster mode: PostgreSQL connection string (sessions, leases, checkpoints); settings \"postgres\"")
	fs.StringVar(&f.NodeID, "node-id", "", "cluster mode: this node's name in leases and listings (default: host name and process id); settings \"nodeId\"")
	fs.DurationVar(&f.LeaseTTL, "lease-ttl", 0, "cluster mode: how long a dead node keeps its sessions (default 10s); settings \"leaseTTL\"")
}

// Resolve fills the flags not given from the settings file and reports
// whether cluster mode is on. Either both --nats and --postgres are set
// or neither.
func (f *ClusterFlags) Resolve(getenv func(string) string) (bool, error) {
	conf, err := LoadConfig(ConfigPath(getenv))
	if err != nil {
		return false, err
	}
	set := map[string]bool{}
	if f.fs != nil {
		set = setFlags(f.fs)
	}
	str := func(name string, dst *string, v string) {
		if !set[name] && v != "" {
			*dst = v
		}
	}
	str("nats", &f.NATS, conf.NATS)
	str("postgres", &f.Postgres, conf.Postgres)
	str("node-id", &f.NodeID, conf.NodeID)
	if !set["lease-ttl"] && conf.LeaseTTL != 0 {
		f.LeaseTTL = time.Duration(conf.LeaseTTL)
	}
	switch {
	case f.NATS == "" && f.Postgres == "":
		return false, nil
	case f.NATS == "":
		return false, errors.New("cluster mode needs --nats as well as --postgres")
	case f.Postgres == "":
		return false, errors.New("cluster mode needs --postgres as well as --nats")
	case f.LeaseTTL < 0:
		return false, fmt.Errorf("--lease-ttl %v is negative", f.LeaseTTL)
	}
	if f.NodeID == "" {
		host, err := os.Hostname()
		if err != nil {
			host = "node"
		}
		f.NodeID = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	return true, nil
}
