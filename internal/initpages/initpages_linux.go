package initpages

import (
	"bufio"
	"bytes"
	"encoding/binary"
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
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return
	}
	pagemap, err := os.Open("/proc/self/pagemap")
	if err != nil {
		return
	}
	defer pagemap.Close()
	buf := make([]byte, 8<<10)
	for _, m := range readOnly(maps, file) {
		if !clean(pagemap, m, buf) {
			continue
		}
		// MADV_DONTNEED on a private file mapping only unmaps: the next
		// access maps the page cache's page again.
		syscall.Syscall(syscall.SYS_MADVISE, m.start, m.end-m.start, syscall.MADV_DONTNEED)
	}
}

// mapping is an address range of a file mapped read-only.
type mapping struct{ start, end uintptr }

// readOnly returns the read-only private mappings in maps (the text of
// /proc/<pid>/maps) of the files that file selects. Pseudo-files ([vdso])
// are not files.
func readOnly(maps []byte, file func(path string) bool) []mapping {
	var out []mapping
	sc := bufio.NewScanner(bytes.NewReader(maps))
	for sc.Scan() {
		m, perms, path, ok := header(bytes.Fields(sc.Bytes()))
		if ok && (perms == "r-xp" || perms == "r--p") && strings.HasPrefix(path, "/") && file(path) {
			out = append(out, m)
		}
	}
	if sc.Err() != nil {
		return nil
	}
	return out
}

// Bits of a /proc/<pid>/pagemap entry.
const (
	pagePresent  = 1 << 63
	pageSwapped  = 1 << 62
	pageFileOrSh = 1 << 61 // a page of a file, or shared anonymous memory
)

// clean reports whether m holds pages in memory and every one is the
// file's own page, read from pagemap (/proc/self/pagemap) with buf: a
// private copy (a written page of the file, as a debugger writes a
// breakpoint) is anonymous memory, present without the file bit or
// swapped out. A mapping with no page present has nothing to drop — and
// where pagemap shows no page at all, it cannot be trusted to show the
// private ones.
func clean(pagemap *os.File, m mapping, buf []byte) bool {
	page := uintptr(os.Getpagesize())
	present := false
	for addr := m.start; addr < m.end; {
		n := min(int((m.end-addr)/page), len(buf)/8)
		if _, err := pagemap.ReadAt(buf[:n*8], int64(addr/page*8)); err != nil {
			return false
		}
		for i := 0; i < n*8; i += 8 {
			v := binary.LittleEndian.Uint64(buf[i:])
			if v&pageSwapped != 0 || v&pagePresent != 0 && v&pageFileOrSh == 0 {
				return false
			}
			present = present || v&pagePresent != 0
		}
		addr += uintptr(n) * page
	}
	return present
}

// header parses a line of maps: "start-end perms offset dev inode [path]".
func header(f [][]byte) (m mapping, perms, path string, ok bool) {
	if len(f) < 5 {
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
