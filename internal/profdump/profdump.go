// Package profdump lets a benchmark see inside a running `sluice serve`
// without a server of its own to secure: with SLUICE_PROFILE_DIR set, the
// process profiles its CPU into that directory for its whole life, and on
// each SIGUSR1 collects its garbage and writes what it holds then — Go's
// memory statistics and goroutine count (memstats.json), a heap profile
// (heap.pprof) and the goroutines' stacks (goroutine.pprof) — into it,
// each renamed into place whole.
package profdump

import (
	"encoding/json"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"syscall"
)

// Env names the directory variable.
const Env = "SLUICE_PROFILE_DIR"

// Stats is memstats.json.
type Stats struct {
	// HeapAlloc is the live heap after a collection, in bytes.
	HeapAlloc  uint64 `json:"heapAlloc"`
	HeapInuse  uint64 `json:"heapInuse"`
	StackInuse uint64 `json:"stackInuse"`
	Sys        uint64 `json:"sys"`
	NumGC      uint32 `json:"numGC"`
	Goroutines int    `json:"goroutines"`
	// Dumps counts the SIGUSR1s answered, this one included, so that a
	// reader tells a fresh file from the last one.
	Dumps int `json:"dumps"`
}

// Start starts profiling when getenv(Env) names a directory; stop ends
// the CPU profile (call it before exiting). Errors are returned to be
// logged: a benchmark's profiling never stops the server.
func Start(getenv func(string) string) (stop func(), err error) {
	dir := getenv(Env)
	if dir == "" {
		return func() {}, nil
	}
	cpu, err := os.Create(filepath.Join(dir, "cpu.pprof"))
	if err != nil {
		return func() {}, err
	}
	if err := pprof.StartCPUProfile(cpu); err != nil {
		cpu.Close()
		return func() {}, err
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGUSR1)
	done := make(chan struct{})
	go func() {
		dumps := 0
		for {
			select {
			case <-sig:
				dumps++
				dump(dir, dumps)
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(sig)
		close(done)
		pprof.StopCPUProfile()
		cpu.Close()
	}, nil
}

func dump(dir string, n int) {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	st := Stats{HeapAlloc: m.HeapAlloc, HeapInuse: m.HeapInuse, StackInuse: m.StackInuse, Sys: m.Sys, NumGC: m.NumGC,
		Goroutines: runtime.NumGoroutine(), Dumps: n}
	for _, name := range []string{"heap", "goroutine"} {
		path := filepath.Join(dir, name+".pprof")
		if f, err := os.Create(path + ".tmp"); err == nil {
			_ = pprof.Lookup(name).WriteTo(f, 0)
			f.Close()
			_ = os.Rename(path+".tmp", path)
		}
	}
	if b, err := json.Marshal(st); err == nil && os.WriteFile(filepath.Join(dir, "memstats.json.tmp"), b, 0o600) == nil {
		_ = os.Rename(filepath.Join(dir, "memstats.json.tmp"), filepath.Join(dir, "memstats.json"))
	}
}
