package initpages

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"syscall"
	"testing"
	"unsafe"
)

// residentKB reads the Rss of the mapping that starts at addr from
// /proc/self/smaps.
func residentKB(t *testing.T, addr uintptr) int {
	t.Helper()
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	in := false
	for _, line := range bytes.Split(smaps, []byte("\n")) {
		f := bytes.Fields(line)
		if len(f) == 0 {
			continue
		}
		if m, _, _, ok := header(f); ok {
			in = m.start == addr
			continue
		}
		if in && string(f[0]) == "Rss:" {
			n, err := strconv.Atoi(string(f[1]))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no mapping at %#x", addr)
	return 0
}

func addr(b []byte) uintptr { return uintptr(unsafe.Pointer(&b[0])) }

// TestReleaseDropsCleanMappingsOnly maps a file twice read-only, one of
// the mappings holding a private copy of a page (as a debugger's
// breakpoint makes in code): release drops the clean mapping from the
// resident set, its content still reads the same, and the other mapping
// keeps its private page.
func TestReleaseDropsCleanMappingsOnly(t *testing.T) {
	t.Parallel()
	const size = 256 << 10
	want := bytes.Repeat([]byte("initpages "), size/10+1)[:size]
	path := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(path, want, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	clean, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ, syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(clean)
	patched, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(patched)
	patched[0] = 'X'
	if err := syscall.Mprotect(patched, syscall.PROT_READ); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(clean, want) {
		t.Fatal("mapped content differs from the file")
	}
	if kb := residentKB(t, addr(clean)); kb == 0 {
		t.Fatal("the clean mapping is not resident after reading it")
	}

	release(func(p string) bool { return p == path })

	if kb := residentKB(t, addr(clean)); kb != 0 {
		t.Errorf("clean mapping: %d kB resident after release, want 0", kb)
	}
	if kb := residentKB(t, addr(patched)); kb == 0 {
		t.Error("the mapping with a private page was dropped")
	}
	if patched[0] != 'X' {
		t.Error("the private page was lost")
	}
	if !bytes.Equal(clean, want) {
		t.Error("the clean mapping reads differently after release")
	}
}

// TestReadOnlyParsesMaps checks the selection on a fixed maps text: only
// read-only private mappings of files.
func TestReadOnlyParsesMaps(t *testing.T) {
	t.Parallel()
	const maps = `00400000-0104a000 r-xp 00000000 fe:00 11465074                           /opt/sluice
0104a000-01dd8000 r--p 00c4a000 fe:00 11465074                           /opt/sluice
01dd8000-01f04000 rw-p 019d8000 fe:00 11465074                           /opt/sluice
01f04000-04178000 rw-p 00000000 00:00 0 
7f00d1e50000-7f00d1fa6000 r-xp 00026000 fe:00 326269                     /usr/lib/libc.so.6
7f00d1fa6000-7f00d1ff9000 r--s 0017c000 fe:00 11465099                   /dev/shm/shared
7f00d2000000-7f00d2010000 r--p 00001000 fe:00 11465074                   /opt/my files/data
7f00d2ea1000-7f00d2ea3000 r-xp 00000000 00:00 0                          [vdso]
`
	for _, tc := range []struct {
		name string
		file func(string) bool
		want []mapping
	}{
		{"every file", func(string) bool { return true }, []mapping{{0x400000, 0x104a000}, {0x104a000, 0x1dd8000}, {0x7f00d1e50000, 0x7f00d1fa6000}, {0x7f00d2000000, 0x7f00d2010000}}},
		{"one file", func(p string) bool { return p == "/opt/my files/data" }, []mapping{{0x7f00d2000000, 0x7f00d2010000}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := readOnly([]byte(maps), tc.file); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("readOnly = %x, want %x", got, tc.want)
			}
		})
	}
}
