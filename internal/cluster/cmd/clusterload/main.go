// Command clusterload puts a cluster of `sluice serve` nodes under load and
// kills one mid-stream. It starts a NATS server (nats-server embedded in a
// child process of its own, JetStream on; -nats-process=false: in this
// process) and a throwaway PostgreSQL (internal/pgtest), then N nodes, and
// streams
// one answer in each of S sessions from a local fake model that stamps
// every chunk with the time it was sent. Each session has one WebSocket
// client; half of them are attached to a node other than the session's
// owner. When every client has seen a quarter of its answer, node 0 is
// killed with SIGKILL: its clients resume on node 1 from their last seq,
// its sessions are taken over by the other nodes. At the end every
// client's reduced list must equal getMessages from every live node.
//
// It first runs the same load on one `sluice serve` without a cluster, for
// the baseline of the per-delta latency. It prints the figures of issue
// 15: added per-delta latency cross-node vs single node (p50/p99), events
// per second per node, CPU seconds per MB of answers, failover time,
// NATS and PostgreSQL (WAL) bytes per MB of answers.
//
//	go build -o /tmp/sluice ./cmd/sluice
//	go run ./internal/cluster/cmd/clusterload -sluice /tmp/sluice -sessions 100
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/internal/cluster/clustertest"
	"github.com/sluicehq/sluice/internal/fakemodel"
	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/protocol"
)

func main() {
	bin := flag.String("sluice", "", "the sluice binary (required)")
	sessions := flag.Int("sessions", 100, "sessions streaming at once, one WebSocket client each")
	nodes := flag.Int("nodes", 3, "cluster nodes")
	size := flag.Int("answer-bytes", 20_000, "size of each answer")
	pace := flag.Duration("pace", 5*time.Millisecond, "delay between the model's chunks")
	jitter := flag.Float64("jitter", 0, "spread each delay at random over pace × [1−jitter, 1+jitter]: 0 streams every session in step (each 5 ms a burst of one delta per session, the harder load), 0.5 unaligned as independent requests are")
	ttl := flag.Duration("lease-ttl", 10*time.Second, "the nodes' lease TTL")
	timeout := flag.Duration("timeout", 5*time.Minute, "give up after this long")
	natsProcess := flag.Bool("nats-process", true, "run the NATS server in a process of its own, as a cluster's would be, rather than beside the load's clients")
	rounds := flag.Int("rounds", 1, "run the whole measurement this many times and print the median and range of each figure (the machine's other load varies)")
	flag.Parse()
	if dir := os.Getenv(natsChildEnv); dir != "" {
		if err := natsChild(dir); err != nil {
			fmt.Fprintln(os.Stderr, "clusterload: NATS server:", err)
			os.Exit(1)
		}
		return
	}
	if *bin == "" {
		fmt.Fprintln(os.Stderr, "clusterload: -sluice is required")
		os.Exit(2)
	}
	// The load generator's own collections (its clients decode and reduce
	// every event) stall the goroutines that note when each message was
	// read: noise in both modes' figures, and none of it the nodes'. A
	// real client is a browser elsewhere. (The NATS server child, part of
	// the cluster, keeps Go's default.)
	debug.SetGCPercent(400)
	var all []figures
	var err error
	for r := range *rounds {
		if *rounds > 1 {
			fmt.Printf("round %d of %d\n", r+1, *rounds)
		}
		ctx, cancel := context.WithTimeout(context.Background(), *timeout)
		var f figures
		f, err = run(ctx, *bin, *sessions, *nodes, *size/fakemodel.StampBytes, *pace, *jitter, *ttl, *natsProcess)
		cancel()
		if err != nil {
			break
		}
		all = append(all, f)
	}
	pgtest.Stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "clusterload:", err)
		os.Exit(1)
	}
	if len(all) > 1 {
		summarize(all)
	}
}

// figures are one round's results.
type figures struct {
	singleP50, singleP99, ownerP50, ownerP99, crossP50, crossP99 time.Duration
	eventsPerNode, singleCPUPerMB, cpuPerMB                      float64
}

// summarize prints the median and the range of each figure over rounds.
// The added latencies are each round's differences (cross-node minus
// single node, both measured in that round), not differences of medians.
func summarize(all []figures) {
	dur := func(name string, f func(figures) time.Duration) {
		var d []time.Duration
		for _, x := range all {
			d = append(d, f(x))
		}
		slices.Sort(d)
		r := func(v time.Duration) string { return v.Round(100 * time.Microsecond).String() }
		fmt.Printf("  %-36s median %-9s range %s … %s\n", name, r(d[len(d)/2]), r(d[0]), r(d[len(d)-1]))
	}
	num := func(name string, f func(figures) float64) {
		var v []float64
		for _, x := range all {
			v = append(v, f(x))
		}
		slices.Sort(v)
		fmt.Printf("  %-36s median %-9.3g range %.3g … %.3g\n", name, v[len(v)/2], v[0], v[len(v)-1])
	}
	fmt.Printf("over %d rounds (median of the rounds' figures; range)\n", len(all))
	dur("single node p50", func(f figures) time.Duration { return f.singleP50 })
	dur("single node p99", func(f figures) time.Duration { return f.singleP99 })
	dur("cross-node p50", func(f figures) time.Duration { return f.crossP50 })
	dur("cross-node p99", func(f figures) time.Duration { return f.crossP99 })
	dur("added vs single node (cross) p50", func(f figures) time.Duration { return f.crossP50 - f.singleP50 })
	dur("added vs single node (cross) p99", func(f figures) time.Duration { return f.crossP99 - f.singleP99 })
	dur("added vs single node (owner) p99", func(f figures) time.Duration { return f.ownerP99 - f.singleP99 })
	num("events/s per node", func(f figures) float64 { return f.eventsPerNode })
	num("CPU s per MB, cluster (all nodes)", func(f figures) float64 { return f.cpuPerMB })
	num("CPU s per MB, single node", func(f figures) float64 { return f.singleCPUPerMB })
}

// latencies collects per-delta delivery latencies, until stop: what
// streams across a failover (deltas the killed node had stored, read by a
// client only after it resumed) is the failover's figure, not a delta's.
type latencies struct {
	mu      sync.Mutex
	d       []time.Duration
	stopped bool
}

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	if !l.stopped {
		l.d = append(l.d, d)
	}
	l.mu.Unlock()
}

func (l *latencies) stop() {
	l.mu.Lock()
	l.stopped = true
	l.mu.Unlock()
}

func (l *latencies) pct(p float64) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.d) == 0 {
		return 0
	}
	slices.Sort(l.d)
	return l.d[min(len(l.d)-1, int(float64(len(l.d))*p))]
}

// measure records, for each stamped chunk an event carries, the time from
// the model's sending it to the client's applying it.
func measure(l *latencies) func(protocol.Event, time.Time) {
	return func(ev protocol.Event, at time.Time) {
		c, ok := ev.(protocol.AssistantContentUpdated)
		if !ok {
			return
		}
		for _, f := range strings.Fields(c.Chunk) {
			if ns, err := strconv.ParseInt(f, 10, 64); err == nil {
				l.add(at.Sub(time.Unix(0, ns)))
			}
		}
	}
}

func run(ctx context.Context, bin string, sessions, nodes, chunks int, pace time.Duration, jitter float64, ttl time.Duration, natsProcess bool) (figures, error) {
	var f figures
	err := runInto(ctx, &f, bin, sessions, nodes, chunks, pace, jitter, ttl, natsProcess)
	return f, err
}

func runInto(ctx context.Context, fig *figures, bin string, sessions, nodes, chunks int, pace time.Duration, jitter float64, ttl time.Duration, natsProcess bool) error {
	fm := fakemodel.New(func(fakemodel.Request) fakemodel.Answer {
		return fakemodel.Answer{Text: make([]string, chunks), Pace: pace, Jitter: jitter, Stamp: true}
	})
	defer fm.Close()
	answerMB := float64(sessions*chunks*fakemodel.StampBytes) / 1e6

	// The baseline: one process, no cluster.
	home, err := os.MkdirTemp("", "clusterload-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(home)
	single, err := clustertest.Start(ctx, clustertest.NodeConfig{Bin: bin, ModelURL: fm.URL(), Home: home}, "single")
	if err != nil {
		return err
	}
	var base latencies
	var clients []*clustertest.Client
	for range sessions {
		c, err := clustertest.Attach(ctx, single.WS, "")
		if err != nil {
			return err
		}
		c.OnEvent(measure(&base))
		clients = append(clients, c)
	}
	began := time.Now()
	if err := sendAll(ctx, clients); err != nil {
		return err
	}
	// The latencies of the same part of each answer as the cluster's:
	// up to a quarter of it, the start of the runs included.
	for _, c := range clients {
		if err := c.WaitSeq(ctx, int64(chunks/4)); err != nil {
			return err
		}
	}
	base.stop()
	for _, c := range clients {
		if err := c.WaitIdle(ctx, 0); err != nil {
			return err
		}
		c.Close()
	}
	singleWall := time.Since(began)
	singleCPU, _ := single.Stop()
	fmt.Printf("single node         %d sessions × %d chunks in %.2fs, CPU %.2fs (%.3fs per MB of answers)\n",
		sessions, chunks, singleWall.Seconds(), singleCPU.Seconds(), singleCPU.Seconds()/answerMB)
	fmt.Printf("  per-delta latency p50 %v p99 %v (the deltas delivered until every client reached seq %d)\n", base.pct(0.5), base.pct(0.99), chunks/4)
	fig.singleP50, fig.singleP99, fig.singleCPUPerMB = base.pct(0.5), base.pct(0.99), singleCPU.Seconds()/answerMB

	// The cluster.
	natsDir, err := os.MkdirTemp("", "clusterload-nats-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(natsDir)
	var ns natsServer
	if natsProcess {
		ns, err = startNATSChild(natsDir)
	} else {
		ns, err = startNATS(natsDir)
	}
	if err != nil {
		return err
	}
	defer ns.Shutdown()
	dsn, err := pgtest.NewDatabase()
	if err != nil {
		return err
	}
	walStart, err := walBytes(ctx, dsn)
	if err != nil {
		return err
	}
	cfg := clustertest.NodeConfig{Bin: bin, NATS: ns.ClientURL(), Postgres: dsn, ModelURL: fm.URL(), Home: home, LeaseTTL: ttl}
	var ns_ []*clustertest.Node
	defer func() {
		for _, n := range ns_ {
			n.Kill()
		}
	}()
	for i := range nodes {
		n, err := clustertest.Start(ctx, cfg, fmt.Sprintf("n%d", i))
		if err != nil {
			return err
		}
		ns_ = append(ns_, n)
	}
	natsBefore, _ := ns.Bytes()
	var onOwner, crossNode latencies
	clients = clients[:0]
	home_ := make([]int, sessions) // the node each client is attached to
	var measures []func(protocol.Event, time.Time)
	for i := range sessions {
		owner := i % nodes
		c, err := clustertest.Attach(ctx, ns_[owner].WS, "")
		if err != nil {
			return err
		}
		lat := &onOwner
		home_[i] = owner
		if i%2 == 1 {
			// Half the clients on another node than the session's.
			id := c.Session
			c.Close()
			home_[i] = (owner + 1) % nodes
			if c, err = clustertest.Attach(ctx, ns_[home_[i]].WS, id); err != nil {
				return err
			}
			lat = &crossNode
		}
		measures = append(measures, measure(lat))
		c.OnEvent(measures[i])
		clients = append(clients, c)
	}
	began = time.Now()
	if err := sendAll(ctx, clients); err != nil {
		return err
	}
	for _, c := range clients {
		if err := c.WaitSeq(ctx, int64(chunks/4)); err != nil {
			return err
		}
	}
	// Kill node 0; note for each of its sessions when the first event
	// after the kill arrives (published by the node that took it over).
	var failMu sync.Mutex
	var failovers []time.Duration
	killed := time.Now()
	seqAtKill := make([]int64, sessions)
	cut := 0 // sessions of node 0 still running at the kill
	for i, c := range clients {
		st, _ := c.State()
		seqAtKill[i] = st.Seq
		if i%nodes == 0 && st.Running {
			cut++
		}
	}
	onOwner.stop()
	crossNode.stop()
	ns_[0].Kill()
	for i, c := range clients {
		if i%nodes == 0 {
			seen := false
			at := seqAtKill[i]
			m := measures[i]
			c.OnEvent(func(ev protocol.Event, t time.Time) {
				m(ev, t)
				if !seen && ev.Head().Seq > at && fromNewOwner(ev) {
					seen = true
					failMu.Lock()
					failovers = append(failovers, t.Sub(killed))
					failMu.Unlock()
				}
			})
		}
		if home_[i] == 0 {
			<-c.Gone()
			if err := c.Resume(ctx, ns_[1].WS); err != nil {
				return fmt.Errorf("resume: %w", err)
			}
		}
	}
	for i, c := range clients {
		if err := c.WaitIdle(ctx, int64(chunks/4)); err != nil {
			st, _ := c.State()
			_, _, resumed, resyncs, owner := c.Stats()
			return fmt.Errorf("session %d (%s, owner %s then %s, client on n%d, resumed %d, resynced %d) at seq %d running %v: %w\n%s",
				i, c.Session, ns_[i%nodes].ID, owner, home_[i], resumed, resyncs, st.Seq, st.Running, err, logs(ns_, c.Session))
		}
	}
	wall := time.Since(began)
	natsAfter, _ := ns.Bytes()

	// Every client's list equals getMessages from every live node.
	var events int64
	failed, resyncs := 0, 0
	var errs []error
	for _, c := range clients {
		st, cerr := c.State()
		events += st.Seq
		_, _, _, r, _ := c.Stats()
		resyncs += r
		want, _ := json.Marshal(st)
		for _, n := range ns_[1:] {
			snap, _, err := clustertest.Snapshot(ctx, n.WS, c.Session)
			got, _ := json.Marshal(snap)
			if err == nil && string(got) != string(want) {
				err = fmt.Errorf("session %s: getMessages from %s differs from the client's list", c.Session, n.ID)
			}
			cerr = errors.Join(cerr, err)
		}
		if err := checkAnswer(st); err != nil {
			cerr = errors.Join(cerr, fmt.Errorf("session %s: %w", c.Session, err))
		}
		if cerr != nil {
			failed++
			if len(errs) < 5 {
				errs = append(errs, cerr)
			}
		}
		c.Close()
	}
	walEnd, err := walBytes(ctx, dsn)
	if err != nil {
		return err
	}
	var cpu time.Duration
	for _, n := range ns_ {
		if n == ns_[0] {
			cpu += n.CPU()
			continue
		}
		c, err := n.Stop()
		if err != nil {
			errs = append(errs, fmt.Errorf("node %s: %v", n.ID, err))
		}
		cpu += c
	}
	ns_ = nil
	slices.Sort(failovers)
	natsBytes := float64(natsAfter-natsBefore) / 1e6
	fmt.Printf("cluster             %d nodes, %d sessions (half the clients on a non-owner node), node 0 killed -9 at a quarter of the answers\n", nodes, sessions)
	fmt.Printf("  wall %.2fs, %d events: %.0f events/s per node\n", wall.Seconds(), events, float64(events)/wall.Seconds()/float64(nodes))
	fmt.Printf("  (latencies: the deltas delivered before the kill, when every client reached seq %d)\n", chunks/4)
	fmt.Printf("  per-delta latency on the owner    p50 %v p99 %v\n", onOwner.pct(0.5), onOwner.pct(0.99))
	fmt.Printf("  per-delta latency cross-node      p50 %v p99 %v\n", crossNode.pct(0.5), crossNode.pct(0.99))
	fmt.Printf("  added vs single node (cross-node) p50 %v p99 %v\n", crossNode.pct(0.5)-base.pct(0.5), crossNode.pct(0.99)-base.pct(0.99))
	fmt.Printf("  CPU %.2fs for all nodes: %.3fs per MB of answers\n", cpu.Seconds(), cpu.Seconds()/answerMB)
	fig.ownerP50, fig.ownerP99, fig.crossP50, fig.crossP99 = onOwner.pct(0.5), onOwner.pct(0.99), crossNode.pct(0.5), crossNode.pct(0.99)
	fig.eventsPerNode, fig.cpuPerMB = float64(events)/wall.Seconds()/float64(nodes), cpu.Seconds()/answerMB
	if len(failovers) > 0 {
		fmt.Printf("  failover (kill → first event from the new owner) of %d sessions (%d running at the kill): min %v median %v max %v (lease TTL %v)\n",
			len(failovers), cut, failovers[0].Round(time.Millisecond), failovers[len(failovers)/2].Round(time.Millisecond), failovers[len(failovers)-1].Round(time.Millisecond), ttl)
	}
	fmt.Printf("  NATS %.2f MB in+out: %.2f MB per MB of answers\n", natsBytes, natsBytes/answerMB)
	fmt.Printf("  PostgreSQL WAL %.2f MB: %.2f MB per MB of answers\n", float64(walEnd-walStart)/1e6, float64(walEnd-walStart)/1e6/answerMB)
	fmt.Printf("  clients %d passed, %d failed; %d resumed by a snapshot instead of the events after their seq\n", sessions-failed, failed, resyncs)
	return errors.Join(errs...)
}

// logs are the nodes' log lines about session id, and their warnings.
func logs(nodes []*clustertest.Node, id string) string {
	var b strings.Builder
	for _, n := range nodes {
		for _, line := range strings.Split(n.Stderr(), "\n") {
			if strings.Contains(line, id) || strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
				fmt.Fprintf(&b, "%s: %s\n", n.ID, line)
			}
		}
	}
	return b.String()
}

// fromNewOwner tells the events that end an interrupted run (published
// by the node that took the session over) from the deltas the killed node
// published before it died, some of which may still be on their way.
func fromNewOwner(ev protocol.Event) bool {
	switch e := ev.(type) {
	case protocol.AssistantContentUpdated:
		return e.Stage == protocol.StageEnd
	case protocol.ErrorBlockAdded, protocol.RunStateChanged:
		return true
	}
	return false
}

func sendAll(ctx context.Context, clients []*clustertest.Client) error {
	for _, c := range clients {
		if err := c.Call(ctx, "sendMessage", map[string]any{"sessionId": c.Session, "text": "go"}, nil); err != nil {
			return err
		}
	}
	return nil
}

// checkAnswer checks that the answer's chunks are each there once, in the
// order sent (their stamps increase), and that an interrupted one says so.
func checkAnswer(st protocol.Snapshot) error {
	if len(st.Messages) != 2 {
		return fmt.Errorf("%d messages, want the question and the answer", len(st.Messages))
	}
	a := st.Messages[1]
	var last int64
	for _, f := range strings.Fields(a.Text()) {
		ns, err := strconv.ParseInt(f, 10, 64)
		if err != nil || ns <= last {
			return fmt.Errorf("the answer's chunks are not each there once in order at %q", f)
		}
		last = ns
	}
	return nil
}

// walBytes is the database cluster's WAL position: what PostgreSQL wrote.
func walBytes(ctx context.Context, dsn string) (int64, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	var n int64
	err = conn.QueryRow(ctx, "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint").Scan(&n)
	return n, err
}
