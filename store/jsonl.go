package store

import (
	"bufio"
	"bytes"
	"container/list"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// JSONL keeps sessions as append-only JSON Lines files, one per session,
// under one directory per project (the working directory the session ran
// in). Each Append is written with a single write and synced, so a crash
// leaves at most a torn last line, which Load skips with a warning.
//
// Open logs hold no file descriptor while idle beyond the most recently
// used MaxOpen: a server with thousands of sessions keeps a bounded number
// of files open and reopens a log's file when it is next appended to.
type JSONL struct {
	root string
	// MaxOpen bounds the files held open between appends (default 32).
	// Set it before first use.
	MaxOpen int

	mu   sync.Mutex
	open list.List // of *jsonlLog holding a file, most recently used first
}

// NewJSONL returns a store rooted at root (created on first write).
func NewJSONL(root string) *JSONL { return &JSONL{root: root} }

// DefaultRoot is where sessions live: $SLUICE_HOME/projects, else
// $XDG_DATA_HOME/sluice/projects, else ~/.local/share/sluice/projects.
func DefaultRoot() (string, error) {
	if h := os.Getenv("SLUICE_HOME"); h != "" {
		return filepath.Join(h, "projects"), nil
	}
	if x := os.Getenv("XDG_DATA_HOME"); x != "" {
		return filepath.Join(x, "sluice", "projects"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("store: no home directory for the session store (set SLUICE_HOME): %w", err)
	}
	return filepath.Join(home, ".local", "share", "sluice", "projects"), nil
}

// Root is the store's directory.
func (s *JSONL) Root() string { return s.root }

// ProjectDir is the directory of the sessions run in cwd: its absolute
// path with separators turned into dashes, as Claude Code names them.
func (s *JSONL) ProjectDir(cwd string) string {
	abs, err := filepath.Abs(cwd)
	if err != nil {
		abs = cwd
	}
	name := strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == ':' {
			return '-'
		}
		return r
	}, abs)
	return filepath.Join(s.root, name)
}

func validID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// Path is the file of a session.
func (s *JSONL) Path(key Key) (string, error) {
	if !validID(key.ID) {
		return "", fmt.Errorf("store: invalid session id %q", key.ID)
	}
	return filepath.Join(s.ProjectDir(key.WorkDir), key.ID+".jsonl"), nil
}

// Create creates the file of a new session.
func (s *JSONL) Create(_ context.Context, key Key) (Log, error) {
	p, err := s.Path(key)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("store: %w: %s", ErrExists, key.ID)
	}
	if err != nil {
		return nil, fmt.Errorf("store: create session: %w", err)
	}
	l := &jsonlLog{store: s, path: p}
	s.hold(l, f, 0)
	return l, nil
}

// Open opens an existing session's file for appending.
func (s *JSONL) Open(_ context.Context, key Key) (Log, error) {
	p, err := s.Path(key)
	if err != nil {
		return nil, err
	}
	l := &jsonlLog{store: s, path: p}
	f, size, err := l.openFile()
	if err != nil {
		return nil, err
	}
	// A torn last line from a crash would glue itself to the next record:
	// end it so that only the torn record is lost.
	if size > 0 {
		last := make([]byte, 1)
		if r, err := os.Open(p); err == nil {
			_, err = r.ReadAt(last, size-1)
			r.Close()
			if err == nil && last[0] != '\n' {
				if _, err := f.Write([]byte{'\n'}); err != nil {
					f.Close()
					return nil, fmt.Errorf("store: %w", err)
				}
				size++
			}
		}
	}
	s.hold(l, f, size)
	return l, nil
}

// jsonlLog is an open session file whose descriptor the store may release
// while it is idle.
type jsonlLog struct {
	store *JSONL
	path  string

	mu     sync.Mutex // taken before store.mu
	f      *os.File   // nil while released
	size   int64      // the file's size as this log wrote it
	elem   *list.Element
	closed bool
}

func (l *jsonlLog) openFile() (*os.File, int64, error) {
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND, 0o600)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, fmt.Errorf("store: %w: %s", ErrNotFound, strings.TrimSuffix(filepath.Base(l.path), ".jsonl"))
	}
	if err != nil {
		return nil, 0, fmt.Errorf("store: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("store: %w", err)
	}
	return f, st.Size(), nil
}

// hold gives l its file and marks it most recently used, releasing the
// files of the least recently used idle logs past MaxOpen. A log busy
// appending is never waited for (TryLock): it is in use, so it stays open
// and the bound is restored by a later append.
func (s *JSONL) hold(l *jsonlLog, f *os.File, size int64) {
	l.f, l.size = f, size
	s.touch(l)
}

// touch is called with l.mu held, or before l is shared.
func (s *JSONL) touch(l *jsonlLog) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l.elem != nil {
		s.open.MoveToFront(l.elem)
	} else {
		l.elem = s.open.PushFront(l)
	}
	max := s.MaxOpen
	if max <= 0 {
		max = 32
	}
	for e := s.open.Back(); e != nil && s.open.Len() > max; {
		prev := e.Prev()
		v := e.Value.(*jsonlLog)
		if v != l && v.mu.TryLock() {
			s.open.Remove(e)
			v.elem = nil
			v.f.Close()
			v.f = nil
			v.mu.Unlock()
		}
		e = prev
	}
}

// forget drops l from the open list. Called with l.mu held.
func (s *JSONL) forget(l *jsonlLog) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l.elem != nil {
		s.open.Remove(l.elem)
		l.elem = nil
	}
}

// Append writes records, one line each, then syncs. Records are gathered
// into writes of at most appendChunk bytes (a record larger than that is
// written as it is), so a long answer is not copied into one more buffer,
// and no buffer outlives the call. A write that fails part-way (a full
// disk) is cut back, so the file never holds part of a record that Append
// reported as failed.
func (l *jsonlLog) Append(_ context.Context, records ...json.RawMessage) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return errors.New("store: append to closed session file")
	}
	pieces := make([][]byte, 0, 2*len(records))
	for _, r := range records {
		if bytes.ContainsAny(r, "\r\n") {
			// Compact keeps the one-record-per-line invariant for records
			// that were encoded with indentation.
			var c bytes.Buffer
			if err := json.Compact(&c, r); err != nil {
				return fmt.Errorf("store: record: %w", err)
			}
			r = c.Bytes()
		}
		pieces = append(pieces, r, newline)
	}
	if l.f == nil {
		f, size, err := l.openFile()
		if err != nil {
			return err
		}
		l.f, l.size = f, size
	}
	l.store.touch(l)
	n, err := writeGathered(l.f, pieces)
	if err == nil {
		err = l.f.Sync()
		if err != nil {
			err = fmt.Errorf("store: sync %s: %w", l.path, err)
		}
	} else {
		err = fmt.Errorf("store: write %s: %w", l.path, err)
	}
	if err != nil {
		if n > 0 {
			_ = l.f.Truncate(l.size) // best effort: the error is what matters
		}
		return err
	}
	l.size += n
	return nil
}

var newline = []byte{'\n'}

// appendChunk is the most Append copies into one write.
const appendChunk = 64 << 10

// writeGathered writes pieces in order, small ones joined into writes of
// up to appendChunk bytes, and returns the bytes written.
func writeGathered(f *os.File, pieces [][]byte) (int64, error) {
	var total int64
	var buf []byte
	flush := func() error {
		if len(buf) == 0 {
			return nil
		}
		n, err := f.Write(buf)
		total += int64(n)
		buf = buf[:0]
		return err
	}
	for _, p := range pieces {
		if len(p) > appendChunk {
			if err := flush(); err != nil {
				return total, err
			}
			n, err := f.Write(p)
			total += int64(n)
			if err != nil {
				return total, err
			}
			continue
		}
		if len(buf)+len(p) > appendChunk {
			if err := flush(); err != nil {
				return total, err
			}
		}
		if buf == nil {
			buf = make([]byte, 0, min(appendChunk, totalLen(pieces)))
		}
		buf = append(buf, p...)
	}
	return total, flush()
}

func totalLen(pieces [][]byte) int {
	n := 0
	for _, p := range pieces {
		n += len(p)
	}
	return n
}

// Close closes the file.
func (l *jsonlLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	l.store.forget(l)
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

// Load reads every record of a session. A line that is not valid JSON (a
// torn write) is skipped and reported in warnings.
func (s *JSONL) Load(_ context.Context, key Key) (records []json.RawMessage, warnings []string, err error) {
	p, err := s.Path(key)
	if err != nil {
		return nil, nil, err
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("store: %w: %s", ErrNotFound, key.ID)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("store: %w", err)
	}
	defer f.Close()
	return readRecords(f, p, -1)
}

// readRecords reads up to max records (all when max < 0). It reads lines
// of any length: a session record may hold a long tool output.
func readRecords(r io.Reader, name string, max int) (records []json.RawMessage, warnings []string, err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	for line := 1; max < 0 || len(records) < max; line++ {
		data, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(data)) > 0 {
			trimmed := bytes.TrimRight(data, "\r\n")
			if json.Valid(trimmed) {
				records = append(records, json.RawMessage(bytes.Clone(trimmed)))
			} else {
				warnings = append(warnings, fmt.Sprintf("%s:%d: skipped a damaged record (%d bytes), probably torn by a crash", name, line, len(trimmed)))
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return records, warnings, fmt.Errorf("store: read %s: %w", name, err)
		}
	}
	return records, warnings, nil
}

const headRecords = 8

// List returns the sessions of cwd's project, most recently modified first.
func (s *JSONL) List(_ context.Context, cwd string) ([]Info, error) {
	dir := s.ProjectDir(cwd)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	var out []Info
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".jsonl")
		if !ok || e.IsDir() || !validID(id) {
			continue
		}
		st, err := e.Info()
		if err != nil {
			continue
		}
		info := Info{ID: id, Modified: st.ModTime(), Size: st.Size()}
		p := filepath.Join(dir, e.Name())
		if f, err := os.Open(p); err == nil {
			info.Head, _, _ = readRecords(io.LimitReader(f, 256<<10), p, headRecords)
			f.Close()
		}
		out = append(out, info)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Modified.After(out[j].Modified) })
	return out, nil
}
