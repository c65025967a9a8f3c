// Command clusterscale measures how `sluice serve` nodes scale with the
// sessions they hold: for one node and for three (-nodes), on one NATS
// server (embedded) and one throwaway PostgreSQL (internal/pgtest), it
// opens sessions in steps (-sessions 10,100,1000,10000), each with a
// WebSocket client attached to its owner, and at each step
//
//   - measures the nodes' memory with the sessions idle: RSS (VmRSS) and
//     the live Go heap after a collection (the nodes write it on SIGUSR1,
//     package profdump), less the nodes' own before any session, ÷ the
//     sessions; and the CPU the idle sessions cost per second;
//   - streams one answer in min(open, -streaming) of them at once from a
//     fake model that stamps each chunk with the time it sent it, and
//     measures the nodes' CPU per delta delivered and the added latency of
//     each delta (model's send → client's apply), p50 and p99;
//   - checks that nothing was lost: every streamed answer holds each of
//     its chunks once, in order, and every client's reduced list equals
//     getMessages from another node (or, with one node, its own).
//
// The NATS server runs in a child process (this program again).
//
// It prints a table, and how each per-session and per-delta figure grew
// from the first step to the last. The nodes' CPU profiles and their last
// heap and goroutine profiles stay in -profile-dir when given.
//
//	go build -o /tmp/sluice ./cmd/sluice
//	go run ./internal/cluster/cmd/clusterscale -sluice /tmp/sluice
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/internal/cluster/clustertest"
	"github.com/sluicehq/sluice/internal/fakemodel"
	"github.com/sluicehq/sluice/internal/natstest"
	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/internal/profdump"
	"github.com/sluicehq/sluice/protocol"
)

func main() {
	bin := flag.String("sluice", "", "the sluice binary (required)")
	steps := flag.String("sessions", "10,100,1000,10000", "open sessions at each step, ascending")
	nodeCounts := flag.String("nodes", "1,3", "cluster sizes to measure")
	streaming := flag.Int("streaming", 1000, "most sessions streaming at once at a step")
	chunks := flag.Int("chunks", 40, "chunks of each streamed answer")
	pace := flag.Duration("pace", 250*time.Millisecond, "delay between a model's chunks (1,000 streams at 250 ms: 4,000 deltas/s, which two shared cores carry)")
	jitter := flag.Float64("jitter", 0.5, "spread each delay over pace × [1−jitter, 1+jitter], unaligned as independent requests are")
	parallel := flag.Int("open-parallel", 16, "sessions opened at once")
	idle := flag.Duration("idle", 5*time.Second, "how long the idle sessions' CPU is measured at each step")
	ttl := flag.Duration("lease-ttl", 10*time.Second, "the nodes' lease TTL")
	profDir := flag.String("profile-dir", "", "keep the nodes' CPU, heap and goroutine profiles here (default: a temporary directory, removed)")
	timeout := flag.Duration("timeout", time.Hour, "give up after this long")
	flag.Parse()
	if child, err := natstest.ServeChild(); child {
		if err != nil {
			fmt.Fprintln(os.Stderr, "clusterscale: NATS server:", err)
			os.Exit(1)
		}
		return
	}
	if *bin == "" {
		fmt.Fprintln(os.Stderr, "clusterscale: -sluice is required")
		os.Exit(2)
	}
	sizes, err1 := ints(*steps)
	clusters, err2 := ints(*nodeCounts)
	if err := errors.Join(err1, err2); err != nil || !slices.IsSorted(sizes) {
		fmt.Fprintln(os.Stderr, "clusterscale: -sessions and -nodes are comma-separated counts, -sessions ascending:", err)
		os.Exit(2)
	}
	// As clusterload: the load generator's own collections would stall the
	// goroutines that note when each message was read.
	debug.SetGCPercent(400)
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	var err error
	for _, n := range clusters {
		cfg := config{bin: *bin, nodes: n, sizes: sizes, streaming: *streaming, chunks: *chunks, pace: *pace, jitter: *jitter,
			parallel: *parallel, idle: *idle, ttl: *ttl, profDir: *profDir}
		if err = run(ctx, cfg); err != nil {
			break
		}
	}
	pgtest.Stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "clusterscale:", err)
		os.Exit(1)
	}
}

func ints(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%q is not a count", f)
		}
		out = append(out, n)
	}
	return out, nil
}

type config struct {
	bin               string
	nodes             int
	sizes             []int
	streaming, chunks int
	pace              time.Duration
	jitter            float64
	parallel          int
	idle, ttl         time.Duration
	profDir           string
}

// row is one step's figures.
type row struct {
	open, streamed                int
	rssPerSession, heapPerSession float64 // bytes
	goroutinesPerSession          float64
	idleCPUPerSession             time.Duration // per second
	cpuPerDelta                   time.Duration
	// marginalCPUPerDelta leaves out what the idle sessions cost while
	// the others streamed (the idle rate × the streaming time).
	marginalCPUPerDelta time.Duration
	p50, p99            time.Duration
	deltas              int64
	lost                int
}

// node is a started node and where it writes its profiles.
type node struct {
	*clustertest.Node
	dir   string
	dumps int
}

func run(ctx context.Context, cfg config) error {
	fm := fakemodel.New(func(fakemodel.Request) fakemodel.Answer {
		return fakemodel.Answer{Text: make([]string, cfg.chunks), Pace: cfg.pace, Jitter: cfg.jitter, Stamp: true}
	})
	defer fm.Close()
	home, err := os.MkdirTemp("", "clusterscale-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(home)
	// The NATS server in a process of its own, as a cluster's would be:
	// not sharing a garbage collector with the 10,000 clients here.
	ns, err := natstest.StartChild(filepath.Join(home, "nats"))
	if err != nil {
		return err
	}
	defer ns.Shutdown()
	dsn, err := pgtest.NewDatabase()
	if err != nil {
		return err
	}
	profRoot := cfg.profDir
	if profRoot == "" {
		profRoot = filepath.Join(home, "profiles")
	}
	var nodes []*node
	defer func() {
		for _, n := range nodes {
			n.Kill()
		}
	}()
	for i := range cfg.nodes {
		id := fmt.Sprintf("n%d", i)
		dir := filepath.Join(profRoot, fmt.Sprintf("%dnodes-%s", cfg.nodes, id))
		// An earlier run's memstats.json would read as this one's.
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		n, err := clustertest.Start(ctx, clustertest.NodeConfig{
			Bin: cfg.bin, NATS: ns.ClientURL(), Postgres: dsn, ModelURL: fm.URL(), Home: home, LeaseTTL: cfg.ttl,
			Env: []string{profdump.Env + "=" + dir},
		}, id)
		if err != nil {
			return err
		}
		nodes = append(nodes, &node{Node: n, dir: dir})
	}
	baseRSS, baseHeap, baseG, err := memory(ctx, nodes)
	if err != nil {
		return err
	}
	fmt.Printf("%d node(s): before any session RSS %.1f MB, live heap %.1f MB, %d goroutines (all nodes)\n",
		cfg.nodes, float64(baseRSS)/1e6, float64(baseHeap)/1e6, baseG)
	fmt.Printf("  %7s %9s %12s %12s %11s %14s %12s %12s %10s %10s %9s %5s\n",
		"open", "streaming", "RSS/session", "heap/sess.", "gorout./s.", "idle CPU/s.·s", "CPU/delta", "w/o idle", "p50", "p99", "deltas", "lost")

	var clients []*clustertest.Client
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	var rows []row
	streamed := 0 // clients[:streamed] have streamed an answer
	for _, size := range cfg.sizes {
		opened, err := open(ctx, nodes, len(clients), size-len(clients), cfg.parallel)
		clients = append(clients, opened...)
		if err != nil {
			return err
		}
		r := row{open: size}
		// Idle: let what opening started settle, then measure.
		cpu0 := nodesCPU(nodes)
		time.Sleep(cfg.idle)
		idleCPU := nodesCPU(nodes) - cpu0
		r.idleCPUPerSession = idleCPU / time.Duration(size) * time.Second / cfg.idle
		rss, heap, g, err := memory(ctx, nodes)
		if err != nil {
			return err
		}
		r.rssPerSession = float64(int64(rss)-int64(baseRSS)) / float64(size)
		r.heapPerSession = float64(int64(heap)-int64(baseHeap)) / float64(size)
		r.goroutinesPerSession = float64(g-baseG) / float64(size)

		// Stream in the sessions that have not yet, the newest first
		// when there are more than enough.
		s := min(size, cfg.streaming)
		from := max(streamed, size-s)
		batch := clients[from:size]
		if len(batch) < s { // fewer new sessions than streams: add older ones
			batch = clients[size-s : size]
		}
		r.streamed = len(batch)
		var lat latencies
		for _, c := range batch {
			c.OnEvent(lat.measure)
		}
		before := make([]int64, len(batch))
		for i, c := range batch {
			st, _ := c.State()
			before[i] = st.Seq
		}
		cpu0 = nodesCPU(nodes)
		began := time.Now()
		for _, c := range batch {
			if err := c.Call(ctx, "sendMessage", map[string]any{"sessionId": c.Session, "text": "go"}, nil); err != nil {
				return fmt.Errorf("%w; the nodes' warnings:\n%s", err, warnings(nodes))
			}
		}
		// A run that does not end within four times its pace (and two
		// minutes) is hung, not slow.
		stepCtx, cancel := context.WithTimeout(ctx, 4*time.Duration(float64(cfg.chunks)*float64(cfg.pace)*(1+cfg.jitter))+2*time.Minute)
		hung := 0
		for i, c := range batch {
			if err := c.WaitIdle(stepCtx, before[i]); err != nil {
				hung++
			}
		}
		cancel()
		if hung > 0 {
			return fmt.Errorf("%d of %d sessions streaming at %d open did not end; the nodes' warnings:\n%s", hung, len(batch), size, warnings(nodes))
		}
		cpu := nodesCPU(nodes) - cpu0
		idleShare := time.Duration(float64(idleCPU) * float64(time.Since(began)) / float64(cfg.idle))
		for _, c := range batch {
			c.OnEvent(nil)
		}
		r.deltas = lat.count()
		if r.deltas > 0 {
			r.cpuPerDelta = cpu / time.Duration(r.deltas)
			r.marginalCPUPerDelta = max(0, cpu-idleShare) / time.Duration(r.deltas)
		}
		r.p50, r.p99 = lat.pct(0.5), lat.pct(0.99)
		r.lost = check(ctx, nodes, batch, cfg.chunks)
		if want := int64(len(batch) * cfg.chunks); r.deltas != want {
			fmt.Printf("  %d deltas of %d stamped chunks reached the clients\n", r.deltas, want)
			r.lost++
		}
		streamed = max(streamed, size)
		rows = append(rows, r)
		if w := warnings(nodes); w != "" {
			fmt.Printf("  the nodes' warnings so far:\n%s", w)
		}
		fmt.Printf("  %7d %9d %9.1f KB %9.1f KB %11.2f %11.1f µs %9.1f µs %9.1f µs %10v %10v %9d %5d\n",
			r.open, r.streamed, r.rssPerSession/1e3, r.heapPerSession/1e3, r.goroutinesPerSession,
			float64(r.idleCPUPerSession.Nanoseconds())/1e3, float64(r.cpuPerDelta.Nanoseconds())/1e3, float64(r.marginalCPUPerDelta.Nanoseconds())/1e3,
			r.p50.Round(100*time.Microsecond), r.p99.Round(100*time.Microsecond), r.deltas, r.lost)
	}
	first, last := rows[0], rows[len(rows)-1]
	ratio := func(a, b float64) string {
		if a <= 0 {
			return "n/a"
		}
		return fmt.Sprintf("%.2f×", b/a)
	}
	for i := 1; i < len(rows); i++ {
		a, b := rows[i-1], rows[i]
		fmt.Printf("  growth %d → %d sessions: RSS/session %s, heap/session %s, CPU/delta %s (w/o idle %s), p50 %s, p99 %s\n",
			a.open, b.open, ratio(a.rssPerSession, b.rssPerSession), ratio(a.heapPerSession, b.heapPerSession),
			ratio(float64(a.cpuPerDelta), float64(b.cpuPerDelta)), ratio(float64(a.marginalCPUPerDelta), float64(b.marginalCPUPerDelta)),
			ratio(float64(a.p50), float64(b.p50)), ratio(float64(a.p99), float64(b.p99)))
	}
	fmt.Printf("  growth %d → %d sessions: RSS/session %s, heap/session %s, CPU/delta %s (w/o idle %s)\n",
		first.open, last.open, ratio(first.rssPerSession, last.rssPerSession), ratio(first.heapPerSession, last.heapPerSession),
		ratio(float64(first.cpuPerDelta), float64(last.cpuPerDelta)), ratio(float64(first.marginalCPUPerDelta), float64(last.marginalCPUPerDelta)))
	lost := 0
	for _, r := range rows {
		lost += r.lost
	}
	for _, n := range nodes {
		if _, err := n.Stop(); err != nil {
			return fmt.Errorf("node %s: %v\n%s", n.ID, err, n.Stderr())
		}
	}
	nodes = nil
	if lost > 0 {
		return fmt.Errorf("%d sessions lost or garbled something", lost)
	}
	return nil
}

// warnings counts the nodes' warning and error lines by message.
func warnings(nodes []*node) string {
	count := map[string]int{}
	sample := map[string]string{}
	for _, n := range nodes {
		for _, line := range strings.Split(n.Stderr(), "\n") {
			if !strings.Contains(line, "level=WARN") && !strings.Contains(line, "level=ERROR") {
				continue
			}
			msg := line
			if _, after, ok := strings.Cut(line, "msg="); ok {
				msg = after
				if strings.HasPrefix(msg, `"`) {
					if q, err := strconv.QuotedPrefix(msg); err == nil {
						msg = q
					}
				} else {
					msg, _, _ = strings.Cut(msg, " ")
				}
			}
			count[n.ID+": "+msg]++
			if _, ok := sample[n.ID+": "+msg]; !ok {
				sample[n.ID+": "+msg] = line[:min(len(line), 400)]
			}
		}
	}
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(count)) {
		fmt.Fprintf(&b, "  %6d × %s\n         e.g. %s\n", count[k], k, sample[k])
	}
	return b.String()
}

// open attaches count new sessions, the i-th owned by node (first+i) mod
// the nodes, parallel at a time.
func open(ctx context.Context, nodes []*node, first, count, parallel int) ([]*clustertest.Client, error) {
	out := make([]*clustertest.Client, count)
	errs := make([]error, count)
	next := make(chan int)
	var wg sync.WaitGroup
	for range parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				out[i], errs[i] = clustertest.Attach(ctx, nodes[(first+i)%len(nodes)].WS, "")
			}
		}()
	}
	for i := range count {
		next <- i
	}
	close(next)
	wg.Wait()
	kept := out[:0]
	for _, c := range out {
		if c != nil {
			kept = append(kept, c)
		}
	}
	return kept, errors.Join(errs...)
}

// memory asks every node for its memory statistics after a collection and
// sums them with the nodes' RSS.
func memory(ctx context.Context, nodes []*node) (rss, heap uint64, goroutines int, err error) {
	for _, n := range nodes {
		n.dumps++
		if err := syscall.Kill(n.PID(), syscall.SIGUSR1); err != nil {
			return 0, 0, 0, err
		}
		st, err := waitDump(ctx, n)
		if err != nil {
			return 0, 0, 0, err
		}
		r, err := vmRSS(n.PID())
		if err != nil {
			return 0, 0, 0, err
		}
		rss += r
		heap += st.HeapAlloc
		goroutines += st.Goroutines
	}
	return rss, heap, goroutines, nil
}

func waitDump(ctx context.Context, n *node) (profdump.Stats, error) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		var st profdump.Stats
		if b, err := os.ReadFile(filepath.Join(n.dir, "memstats.json")); err == nil && json.Unmarshal(b, &st) == nil && st.Dumps >= n.dumps {
			return st, nil
		}
		select {
		case <-ctx.Done():
			return st, fmt.Errorf("node %s wrote no memory statistics: %w", n.ID, ctx.Err())
		case <-tick.C:
		}
	}
}

func vmRSS(pid int) (uint64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmRSS")
}

// nodesCPU is the CPU time (user and system) the running nodes used so far.
func nodesCPU(nodes []*node) time.Duration {
	var total time.Duration
	for _, n := range nodes {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", n.PID()))
		if err != nil {
			continue
		}
		// Fields after the command's ")": utime and stime are the 12th
		// and 13th, in clock ticks (100 per second on Linux).
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		total += time.Duration(ut+st) * 10 * time.Millisecond
	}
	return total
}

// latencies collects per-delta delivery latencies.
type latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

// measure records, for each stamped chunk an event carries, the time from
// the model's sending it to the client's applying it.
func (l *latencies) measure(ev protocol.Event, at time.Time) {
	c, ok := ev.(protocol.AssistantContentUpdated)
	if !ok {
		return
	}
	for _, f := range strings.Fields(c.Chunk) {
		if ns, err := strconv.ParseInt(f, 10, 64); err == nil {
			l.mu.Lock()
			l.d = append(l.d, at.Sub(time.Unix(0, ns)))
			l.mu.Unlock()
		}
	}
}

func (l *latencies) count() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return int64(len(l.d))
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

// check counts the streamed sessions that lost something: the last answer
// must hold each of its chunks once, in order, and the client's list must
// equal getMessages from another node than the owner when there is one.
func check(ctx context.Context, nodes []*node, batch []*clustertest.Client, chunks int) int {
	lost := 0
	for i, c := range batch {
		st, err := c.State()
		if err == nil {
			err = checkAnswer(st, chunks)
		}
		if err == nil {
			_, _, _, _, owner := c.Stats()
			n := nodes[i%len(nodes)]
			for _, m := range nodes {
				if m.ID != owner {
					n = m
					break
				}
			}
			var snap protocol.Snapshot
			snap, _, err = clustertest.Snapshot(ctx, n.WS, c.Session)
			got, _ := json.Marshal(snap)
			want, _ := json.Marshal(st)
			if err == nil && string(got) != string(want) {
				err = fmt.Errorf("getMessages from %s differs from the client's list", n.ID)
			}
		}
		if err != nil {
			if lost < 5 {
				fmt.Printf("  session %s: %v\n", c.Session, err)
			}
			lost++
		}
	}
	return lost
}

func checkAnswer(st protocol.Snapshot, chunks int) error {
	if len(st.Messages) == 0 {
		return errors.New("no messages")
	}
	fields := strings.Fields(st.Messages[len(st.Messages)-1].Text())
	if len(fields) != chunks {
		return fmt.Errorf("the answer holds %d chunks, want %d", len(fields), chunks)
	}
	var last int64
	for _, f := range fields {
		ns, err := strconv.ParseInt(f, 10, 64)
		if err != nil || ns <= last {
			return fmt.Errorf("the answer's chunks are not each there once in order at %q", f)
		}
		last = ns
	}
	return nil
}
