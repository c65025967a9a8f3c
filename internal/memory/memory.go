// Package memory finds the instruction files a project keeps for coding
// agents — AGENTS.md and CLAUDE.md — the way Claude Code and the agents
// that read AGENTS.md look for them: the user's own file first, then every
// directory from the repository root down to the working directory, so the
// most specific instructions come last and win where they disagree.
package memory

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/sluicehq/sluice/agent"
)

// Names are the file names read in each directory, in this order.
var Names = []string{"AGENTS.md", "CLAUDE.md", "CLAUDE.local.md"}

// MaxFileSize bounds what is read of one file: a memory file is read into
// every request's system prompt, so a stray multi-megabyte file must not be.
const MaxFileSize = 128 << 10

// Sources says which memory files are read, as Claude Code's settings
// sources do: the user's own files, the project's AGENTS.md and CLAUDE.md,
// and the uncommitted CLAUDE.local.md.
type Sources struct {
	User, Project, Local bool
}

// AllSources reads every memory file.
var AllSources = Sources{User: true, Project: true, Local: true}

// Load reads the memory files for workDir from the given sources. home is
// the user's home directory ("" for none): ~/.claude/CLAUDE.md and
// ~/.config/sluice/AGENTS.md are the user's files. The directories searched
// run from the repository root (the nearest ancestor holding .git) down to
// workDir; outside a repository only workDir is searched. Missing files are
// skipped; a file that exists but cannot be read is an error.
func Load(workDir, home string, from Sources) ([]agent.MemoryFile, error) {
	workDir, err := filepath.Abs(workDir)
	if err != nil {
		return nil, err
	}
	var paths []string
	if home != "" && from.User {
		paths = append(paths,
			filepath.Join(home, ".claude", "CLAUDE.md"),
			filepath.Join(home, ".config", "sluice", "AGENTS.md"))
	}
	for _, dir := range dirs(workDir) {
		for _, name := range Names {
			if name == "CLAUDE.local.md" && !from.Local || name != "CLAUDE.local.md" && !from.Project {
				continue
			}
			paths = append(paths, filepath.Join(dir, name))
		}
	}
	var files []agent.MemoryFile
	seen := map[string]bool{}
	for _, p := range paths {
		f, ok, err := read(p)
		if err != nil {
			return files, err
		}
		// A CLAUDE.md that is a symlink to AGENTS.md (a common setup) is
		// read once.
		real, _ := filepath.EvalSymlinks(p)
		if !ok || seen[real] {
			continue
		}
		seen[real] = true
		files = append(files, f)
	}
	return files, nil
}

// dirs lists the directories from the repository root down to workDir.
func dirs(workDir string) []string {
	var up []string
	for d := workDir; ; {
		up = append(up, d)
		if _, err := os.Stat(filepath.Join(d, ".git")); err == nil {
			break
		}
		parent := filepath.Dir(d)
		if parent == d {
			return []string{workDir} // no repository: the working directory only
		}
		d = parent
	}
	for i, j := 0, len(up)-1; i < j; i, j = i+1, j-1 {
		up[i], up[j] = up[j], up[i]
	}
	return up
}

func read(path string) (agent.MemoryFile, bool, error) {
	fh, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return agent.MemoryFile{}, false, nil
	}
	if err != nil {
		return agent.MemoryFile{}, false, fmt.Errorf("memory file: %w", err)
	}
	defer fh.Close()
	if st, err := fh.Stat(); err != nil || !st.Mode().IsRegular() {
		return agent.MemoryFile{}, false, nil // a directory named CLAUDE.md is not a memory file
	}
	b, err := io.ReadAll(io.LimitReader(fh, MaxFileSize+1))
	if err != nil {
		return agent.MemoryFile{}, false, fmt.Errorf("memory file: %w", err)
	}
	f := agent.MemoryFile{Path: path}
	cut := len(b) > MaxFileSize
	if cut {
		b = b[:MaxFileSize]
	}
	f.Content = strings.ToValidUTF8(string(b), "\uFFFD")
	if strings.TrimSpace(f.Content) == "" {
		return agent.MemoryFile{}, false, nil
	}
	if cut {
		f.Content += fmt.Sprintf("\n[cut at %d KiB]", MaxFileSize>>10)
	}
	return f, true, nil
}
