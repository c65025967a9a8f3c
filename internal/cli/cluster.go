package cli

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// ClusterFlags are the flags of cluster mode (sluice serve, sluice relay):
// with a NATS server and a PostgreSQL database the process is one node of
// a cluster; without them, a single process with its sessions in files.
//
// Credentials come from the environment or files, as NATS's and
// PostgreSQL's own tools take them, so that no password need be on the
// command line (where ps and /proc/PID/cmdline show it to every user of
// the machine): the PostgreSQL connection string from --postgres-file, a
// password from PGPASSWORD or PGPASSFILE (~/.pgpass), or all of it from
// the PG* variables (PGHOST, PGPORT, PGUSER, PGDATABASE, PGSSLMODE, ...);
// NATS's from --nats-creds or NATS_CREDS (a .creds file), NATS_NKEY (a
// seed file), NATS_USER and NATS_PASSWORD, or NATS_TOKEN.
type ClusterFlags struct {
	NATS      string
	NATSCreds string
	// Postgres is the connection string, read from PostgresFile when that
	// is given; "" with PGHOST or PGDATABASE set means the PG* variables.
	Postgres     string
	PostgresFile string
	NodeID       string
	LeaseTTL     time.Duration

	fs *flag.FlagSet
}

// Register adds the flags to fs.
func (f *ClusterFlags) Register(fs *flag.FlagSet) {
	f.fs = fs
	fs.StringVar(&f.NATS, "nats", "", "cluster mode: URL of a NATS server with JetStream (the sessions' events), without a password: credentials from --nats-creds, NATS_CREDS, NATS_NKEY, NATS_USER/NATS_PASSWORD or NATS_TOKEN; settings \"nats\"")
	fs.StringVar(&f.NATSCreds, "nats-creds", "", "cluster mode: a NATS .creds file (user JWT and seed); env NATS_CREDS; settings \"natsCreds\"")
	fs.StringVar(&f.Postgres, "postgres", "", "cluster mode: PostgreSQL connection string (sessions, leases, checkpoints), without a password: PGPASSWORD or PGPASSFILE give it, and the PG* variables whatever is left out (or all of it); settings \"postgres\"")
	fs.StringVar(&f.PostgresFile, "postgres-file", "", "cluster mode: a file holding the PostgreSQL connection string (password included, kept off the command line); settings \"postgresFile\"")
	fs.StringVar(&f.NodeID, "node-id", "", "cluster mode: this node's name in leases and listings (default: host name and process id); settings \"nodeId\"")
	fs.DurationVar(&f.LeaseTTL, "lease-ttl", 0, "cluster mode: how long a dead node keeps its sessions (default 10s); settings \"leaseTTL\"")
}

// Resolve fills the flags not given from the settings file and the
// environment and reports whether cluster mode is on: NATS and
// PostgreSQL are both named, or neither.
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
	str("nats-creds", &f.NATSCreds, conf.NATSCreds)
	str("postgres", &f.Postgres, conf.Postgres)
	str("postgres-file", &f.PostgresFile, conf.PostgresFile)
	str("node-id", &f.NodeID, conf.NodeID)
	if !set["lease-ttl"] && conf.LeaseTTL != 0 {
		f.LeaseTTL = time.Duration(conf.LeaseTTL)
	}
	if f.NATSCreds == "" {
		f.NATSCreds = getenv("NATS_CREDS")
	}
	if f.PostgresFile != "" {
		if f.Postgres != "" {
			return false, errors.New("give --postgres or --postgres-file, not both")
		}
		data, err := os.ReadFile(f.PostgresFile)
		if err != nil {
			return false, fmt.Errorf("--postgres-file: %w", err)
		}
		if f.Postgres = strings.TrimSpace(string(data)); f.Postgres == "" {
			return false, fmt.Errorf("--postgres-file %s is empty", f.PostgresFile)
		}
	}
	// The PG* variables alone name a database only with --nats: a PGHOST
	// set for psql does not turn a single `sluice serve` into a node.
	pgEnv := getenv("PGHOST") != "" || getenv("PGDATABASE") != "" || getenv("PGSERVICE") != ""
	switch {
	case f.NATS == "" && f.Postgres == "":
		return false, nil
	case f.NATS == "":
		return false, errors.New("cluster mode needs --nats as well as --postgres")
	case f.Postgres == "" && !pgEnv:
		return false, errors.New("cluster mode needs --postgres, --postgres-file or the PG* variables (PGHOST, PGDATABASE, ...) as well as --nats")
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

// WarnCommandLine logs a warning for each password given on the command
// line, where every user of the machine can read it; the logged URL has
// its password redacted.
func (f *ClusterFlags) WarnCommandLine(log *slog.Logger) {
	set := map[string]bool{}
	if f.fs != nil {
		set = setFlags(f.fs)
	}
	if set["nats"] && Redact(f.NATS) != f.NATS {
		log.Warn("the --nats URL holds a password, which ps shows to every user of this machine: give it in NATS_PASSWORD, NATS_TOKEN or a .creds file (--nats-creds)", "nats", Redact(f.NATS))
	}
	if set["postgres"] && (urlPassword(f.Postgres) || keywordPassword().MatchString(f.Postgres)) {
		log.Warn("the --postgres connection string holds a password, which ps shows to every user of this machine: give it in PGPASSWORD, ~/.pgpass or --postgres-file", "postgres", Redact(f.Postgres))
	}
}

// NATSOptions are the options connecting to NATS with the credentials of
// --nats-creds / NATS_CREDS, NATS_NKEY, NATS_USER and NATS_PASSWORD, or
// NATS_TOKEN (a password in the URL itself also works). The server's
// asynchronous errors, a permissions violation among them, are logged to
// log: nats.go drops them otherwise.
func (f *ClusterFlags) NATSOptions(getenv func(string) string, log *slog.Logger) ([]nats.Option, error) {
	opts := []nats.Option{nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
		if sub != nil {
			log.Error("NATS", "subject", sub.Subject, "err", err)
			return
		}
		log.Error("NATS", "err", err)
	})}
	if f.NATSCreds != "" {
		opts = append(opts, nats.UserCredentials(f.NATSCreds))
	}
	if seed := getenv("NATS_NKEY"); seed != "" {
		o, err := nats.NkeyOptionFromSeed(seed)
		if err != nil {
			return nil, fmt.Errorf("NATS_NKEY: %w", err)
		}
		opts = append(opts, o)
	}
	if user := getenv("NATS_USER"); user != "" {
		opts = append(opts, nats.UserInfo(user, getenv("NATS_PASSWORD")))
	}
	if token := getenv("NATS_TOKEN"); token != "" {
		opts = append(opts, nats.Token(token))
	}
	return opts, nil
}

// keywordPassword finds the password of a key=value connection string.
// Compiled when first needed: at package init every command paid for it
// (about 10 KB), and only the cluster's options use it.
var keywordPassword = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)(^|\s)password\s*=\s*('(\\.|[^'])*'|\S+)`)
})

func urlPassword(s string) bool {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return false
	}
	_, ok := u.User.Password()
	return ok
}

// Redact is a NATS URL (or a list of them) or a PostgreSQL connection
// string (URL or key=value) with any password replaced by "xxxxx", for
// logs and messages. A NATS URL's user without a password is a token
// (nats://TOKEN@host): it is replaced too.
func Redact(s string) string {
	if strings.Contains(s, "://") {
		parts := strings.Split(s, ",")
		for i, p := range parts {
			u, err := url.Parse(strings.TrimSpace(p))
			switch {
			case err != nil:
				parts[i] = "(unparsable URL)"
			case u.User == nil:
			case urlPassword(p):
				parts[i] = u.Redacted()
			case !strings.HasPrefix(u.Scheme, "postgres"):
				u.User = url.User("xxxxx")
				parts[i] = u.String()
			}
		}
		return strings.Join(parts, ",")
	}
	return keywordPassword().ReplaceAllString(s, "${1}password=xxxxx")
}
