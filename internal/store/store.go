// Package store keeps sessions as append-only JSONL files, one per session,
// under one directory per project (the working directory the session ran
// in). A record is one JSON value on one line; each Append is written with
// a single write and synced, so a crash leaves at most a torn last line,
// which Load skips with a warning.
package store

import (
	"bufio"
	"bytes"
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
	"time"
)

// ErrNotFound is returned for a session id with no file.
var ErrNotFound = errors.New("session not found")

// Store is a directory of projects.
type Store struct {
	root string
}

// New returns a store rooted at root (created on first write).
func New(root string) *Store { return &Store{root: root} }

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
func (s *Store) Root() string { return s.root }

// ProjectDir is the directory of the sessions run in cwd: its absolute
// path with separators turned into dashes, as Claude Code names them.
func (s *Store) ProjectDir(cwd string) string {
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

// Path is the file of session id in cwd's project.
func (s *Store) Path(cwd, id string) (string, error) {
	if !validID(id) {
		return "", fmt.Errorf("store: invalid session id %q", id)
	}
	return filepath.Join(s.ProjectDir(cwd), id+".jsonl"), nil
}

// File is an open session file. It is safe for concurrent use.
type File struct {
	mu   sync.Mutex
	f    *os.File
	path string
	buf  bytes.Buffer
}

// Create creates the file of a new session.
func (s *Store) Create(cwd, id string) (*File, error) {
	p, err := s.Path(cwd, id)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("store: create session: %w", err)
	}
	return &File{f: f, path: p}, nil
}

// Reopen opens an existing session's file for appending.
func (s *Store) Reopen(cwd, id string) (*File, error) {
	p, err := s.Path(cwd, id)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0o600)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("store: %w: %s", ErrNotFound, id)
	}
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	// A torn last line from a crash would glue itself to the next record:
	// end it so that only the torn record is lost.
	if st, err := f.Stat(); err == nil && st.Size() > 0 {
		last := make([]byte, 1)
		if r, err := os.Open(p); err == nil {
			_, err = r.ReadAt(last, st.Size()-1)
			r.Close()
			if err == nil && last[0] != '\n' {
				if _, err := f.Write([]byte{'\n'}); err != nil {
					f.Close()
					return nil, fmt.Errorf("store: %w", err)
				}
			}
		}
	}
	return &File{f: f, path: p}, nil
}

// Path is the file's path.
func (f *File) Path() string { return f.path }

// Append writes records, one line each, with one write, then syncs.
func (f *File) Append(records ...any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.f == nil {
		return fmt.Errorf("store: append to closed session file")
	}
	f.buf.Reset()
	enc := json.NewEncoder(&f.buf)
	enc.SetEscapeHTML(false)
	for _, r := range records {
		if err := enc.Encode(r); err != nil {
			return fmt.Errorf("store: encode record: %w", err)
		}
	}
	if _, err := f.f.Write(f.buf.Bytes()); err != nil {
		return fmt.Errorf("store: write: %w", err)
	}
	if err := f.f.Sync(); err != nil {
		return fmt.Errorf("store: sync: %w", err)
	}
	return nil
}

// Close closes the file.
func (f *File) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.f == nil {
		return nil
	}
	err := f.f.Close()
	f.f = nil
	return err
}

// Load reads every record of session id in cwd. A line that is not valid
// JSON (a torn write) is skipped and reported in warnings.
func (s *Store) Load(cwd, id string) (records []json.RawMessage, warnings []string, err error) {
	p, err := s.Path(cwd, id)
	if err != nil {
		return nil, nil, err
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("store: %w: %s", ErrNotFound, id)
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

// Info describes a stored session.
type Info struct {
	ID       string
	Path     string
	Modified time.Time
	Size     int64
	// Head holds the session's first records (up to headRecords), from
	// which the caller can read its metadata and title.
	Head []json.RawMessage
}

const headRecords = 8

// List returns the sessions of cwd's project, most recently modified first.
func (s *Store) List(cwd string) ([]Info, error) {
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
		info := Info{ID: id, Path: filepath.Join(dir, e.Name()), Modified: st.ModTime(), Size: st.Size()}
		if f, err := os.Open(info.Path); err == nil {
			info.Head, _, _ = readRecords(io.LimitReader(f, 256<<10), info.Path, headRecords)
			f.Close()
		}
		out = append(out, info)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Modified.After(out[j].Modified) })
	return out, nil
}
