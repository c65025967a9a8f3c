package initpages

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Release drops the clean read-only file mappings — the executable's code,
// read-only data and function tables, and the shared libraries' of a cgo
// build — from the resident set. Call it once, first thing in main, when
// package initialisation is done. It does nothing where it cannot read
// the mappings, and it leaves alone a mapping that holds private copies of
// file pages (a debugger's breakpoint, a uprobe, relocated data): dropping
// those would lose the change.
func Release() {
	release(func(path string) bool { return strings.HasPrefix(path, "/") })
}

// release drops the clean read-only mappings of the files that file
// selects.
func release(file func(path string) bool) {
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return
	}
	for _, m := range clean(smaps, file) {
		// MADV_DONTNEED on a private file mapping only unmaps: the next
		// access maps the page cache's page again.
		syscall.Syscall(syscall.SYS_MADVISE, m.start, m.end-m.start, syscall.MADV_DONTNEED)
	}
}

// mapping is an address range of a file mapped read-only.
type mapping struct{ start, end uintptr }

// clean returns the read-only private mappings in smaps (the text of
// /proc/<pid>/smaps) of the files that file selects and that hold no
// anonymous pages: their every resident page is the file's own, so
// dropping them loses nothing. Pseudo-files ([vdso]) are not files.
func clean(smaps []byte, file func(path string) bool) []mapping {
	var out []mapping
	var cur mapping
	ours := false
	flush := func() {
		if ours {
			out = append(out, cur)
		}
		ours = false
	}
	sc := bufio.NewScanner(bytes.NewReader(smaps))
	for sc.Scan() {
		line := sc.Bytes()
		f := bytes.Fields(line)
		if len(f) == 0 {
			continue
		}
		if m, perms, path, ok := header(f); ok {
			flush()
			cur = m
			ours = (perms == "r-xp" || perms == "r--p") && strings.HasPrefix(path, "/") && file(path)
			continue
		}
		// A private copy of a page (a written page of the file, as a
		// debugger writes a breakpoint) is counted as Anonymous.
		if ours && string(f[0]) == "Anonymous:" && (len(f) < 2 || string(f[1]) != "0") {
			ours = false
		}
	}
	flush()
	if sc.Err() != nil {
		return nil
	}
	return out
}

// header parses a mapping's first line in smaps:
// "start-end perms offset dev inode [path]".
func header(f [][]byte) (m mapping, perms, path string, ok bool) {
	if len(f) < 5 || bytes.HasSuffix(f[0], []byte(":")) {
		return m, "", "", false
	}
	lo, hi, found := bytes.Cut(f[0], []byte("-"))
	if !found {
		return m, "", "", false
	}
	start, err1 := strconv.ParseUint(string(lo), 16, 64)
	end, err2 := strconv.ParseUint(string(hi), 16, 64)
	if err1 != nil || err2 != nil || end <= start {
		return m, "", "", false
	}
	if len(f) >= 6 {
		path = string(bytes.Join(f[5:], []byte(" ")))
	}
	return mapping{uintptr(start), uintptr(end)}, string(f[1]), path, true
}
