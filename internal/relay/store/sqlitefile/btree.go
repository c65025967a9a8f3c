package sqlitefile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Page types of b-tree pages (the first byte of their header).
const (
	indexInterior = 0x02
	tableInterior = 0x05
	indexLeaf     = 0x0A
	tableLeaf     = 0x0D
)

var errTruncatedCell = errors.New("truncated cell")

// walker reads one table's b-tree.
type walker struct {
	f *File
	// seen holds every page visited, b-tree and overflow pages alike: in
	// a sound database each belongs to one place in one tree, so a second
	// visit is a loop, and reading a table costs at most one pass over
	// the file.
	seen map[uint32]bool
	// local counts the payload bytes read from cells. In a sound page the
	// cells do not overlap, so they cannot hold more bytes than the pages
	// visited: a corrupt page whose cell pointers all point into one
	// large cell is refused before it costs a page's size per pointer.
	local uint64
	rows  []Row
}

// walk returns the rows of the table b-tree rooted at page root, in order.
func (f *File) walk(root uint32) ([]Row, error) {
	w := &walker{f: f, seen: map[uint32]bool{}}
	if err := w.tree(root, 0); err != nil {
		return nil, err
	}
	return w.rows, nil
}

func (w *walker) visit(n uint32) ([]byte, error) {
	if w.seen[n] {
		return nil, fmt.Errorf("page %d is reached twice (a loop in the page graph)", n)
	}
	w.seen[n] = true
	return w.f.page(n)
}

func (w *walker) tree(n uint32, depth int) error {
	if depth >= maxDepth {
		return fmt.Errorf("b-tree deeper than %d pages at page %d", maxDepth, n)
	}
	p, err := w.visit(n)
	if err != nil {
		return err
	}
	hdr := 0
	if n == 1 {
		hdr = headerSize // page 1's b-tree header follows the database header
	}
	ptrs := hdr + 8
	switch p[hdr] {
	case tableLeaf:
	case tableInterior:
		ptrs += 4 // the right-most child pointer
	case indexInterior, indexLeaf:
		if depth == 0 {
			return errors.New("a WITHOUT ROWID table (only rowid tables are read)")
		}
		return fmt.Errorf("index page %d inside a table b-tree", n)
	default:
		return fmt.Errorf("page %d is not a b-tree page (type %#x)", n, p[hdr])
	}
	cells := int(binary.BigEndian.Uint16(p[hdr+3:]))
	end := ptrs + 2*cells
	if end > len(p) {
		return fmt.Errorf("page %d: %d cell pointers overrun the page", n, cells)
	}
	for i := range cells {
		off := int(binary.BigEndian.Uint16(p[ptrs+2*i:]))
		if off < end || off >= len(p) {
			return fmt.Errorf("page %d: cell %d at offset %d is outside the cell content area", n, i, off)
		}
		cell := p[off:]
		if p[hdr] == tableLeaf {
			err = w.leafCell(cell)
		} else {
			if len(cell) < 4 {
				return fmt.Errorf("page %d: %w", n, errTruncatedCell)
			}
			// The rowid key that follows the child pointer only guides
			// searches; leafCell checks the order of the rowids.
			err = w.tree(binary.BigEndian.Uint32(cell), depth+1)
		}
		if err != nil {
			return fmt.Errorf("page %d: %w", n, err)
		}
	}
	if p[hdr] == tableInterior {
		return w.tree(binary.BigEndian.Uint32(p[hdr+8:]), depth+1)
	}
	return nil
}

// leafCell appends the row in a table leaf cell.
func (w *walker) leafCell(cell []byte) error {
	size, n1 := varint(cell)
	if n1 == 0 {
		return errTruncatedCell
	}
	key, n2 := varint(cell[n1:])
	if n2 == 0 {
		return errTruncatedCell
	}
	rowid := int64(key)
	if k := len(w.rows); k > 0 && rowid <= w.rows[k-1].RowID {
		return fmt.Errorf("rowid %d follows rowid %d", rowid, w.rows[k-1].RowID)
	}
	// A payload cannot be larger than the pages there are.
	u := uint64(w.f.usable)
	if size > w.f.stored()*u {
		return fmt.Errorf("row %d: payload of %d bytes is larger than the database", rowid, size)
	}
	rest := cell[n1+n2:]
	local := localPayload(size, u)
	if uint64(len(rest)) < local {
		return fmt.Errorf("row %d: %w", rowid, errTruncatedCell)
	}
	if w.local += local; w.local > uint64(len(w.seen))*u {
		return fmt.Errorf("row %d: cells overlap (more payload than pages)", rowid)
	}
	// The overflow pages are appended as they are read, so a corrupt
	// size costs no more than the pages that are there.
	payload := append([]byte(nil), rest[:local]...)
	if local < size {
		if uint64(len(rest)) < local+4 {
			return fmt.Errorf("row %d: %w", rowid, errTruncatedCell)
		}
		next := binary.BigEndian.Uint32(rest[local:])
		for uint64(len(payload)) < size {
			if next == 0 {
				return fmt.Errorf("row %d: overflow chain ends %d bytes short", rowid, size-uint64(len(payload)))
			}
			p, err := w.visit(next)
			if err != nil {
				return fmt.Errorf("row %d: overflow: %w", rowid, err)
			}
			next = binary.BigEndian.Uint32(p)
			take := min(size-uint64(len(payload)), u-4)
			payload = append(payload, p[4:4+take]...)
		}
	}
	values, err := record(payload)
	if err != nil {
		return fmt.Errorf("row %d: %w", rowid, err)
	}
	w.rows = append(w.rows, Row{RowID: rowid, Values: values})
	return nil
}

// localPayload is how many of a table leaf cell's size payload bytes are
// stored in the cell itself, the rest spilling to overflow pages, with
// usable bytes in a page: the spec's formula, exactly.
func localPayload(size, usable uint64) uint64 {
	x := usable - 35
	if size <= x {
		return size
	}
	m := ((usable-12)*32/255 - 23)
	k := m + (size-m)%(usable-4)
	if k <= x {
		return k
	}
	return m
}

// record decodes a record: its header of serial types, then the values.
func record(payload []byte) ([]any, error) {
	hsize, n := varint(payload)
	if n == 0 || hsize < uint64(n) || hsize > uint64(len(payload)) {
		return nil, fmt.Errorf("record header size %d does not fit the payload of %d bytes", hsize, len(payload))
	}
	header := payload[n:hsize]
	body := payload[hsize:]
	var values []any
	for len(header) > 0 {
		t, k := varint(header)
		if k == 0 {
			return nil, errors.New("record header ends inside a serial type")
		}
		header = header[k:]
		size := serialSize(t)
		if size > uint64(len(body)) {
			return nil, fmt.Errorf("column %d (serial type %d) overruns the record", len(values), t)
		}
		b := body[:size]
		body = body[size:]
		var v any
		switch {
		case t == 0:
			v = nil
		case t <= 6:
			v = bigEndianInt(b)
		case t == 7:
			v = math.Float64frombits(binary.BigEndian.Uint64(b))
		case t == 8:
			v = int64(0)
		case t == 9:
			v = int64(1)
		case t == 10 || t == 11:
			return nil, fmt.Errorf("column %d has reserved serial type %d", len(values), t)
		case t%2 == 0:
			v = append([]byte(nil), b...)
		default:
			v = string(b)
		}
		values = append(values, v)
	}
	return values, nil
}

// serialSize is the number of body bytes of a value of serial type t.
func serialSize(t uint64) uint64 {
	switch {
	case t <= 4:
		return []uint64{0, 1, 2, 3, 4}[t]
	case t == 5:
		return 6
	case t == 6 || t == 7:
		return 8
	case t <= 11:
		return 0
	default:
		return (t - 12) / 2
	}
}

// bigEndianInt reads a big-endian two's-complement integer of 1 to 8 bytes.
func bigEndianInt(b []byte) int64 {
	v := int64(int8(b[0]))
	for _, c := range b[1:] {
		v = v<<8 | int64(c)
	}
	return v
}

// varint reads a SQLite varint: 1 to 9 bytes, big-endian, seven bits a
// byte while the high bit is set, and all eight bits of a ninth. It
// returns the length 0 if b ends first.
func varint(b []byte) (uint64, int) {
	var v uint64
	for i := range 8 {
		if i >= len(b) {
			return 0, 0
		}
		v = v<<7 | uint64(b[i]&0x7f)
		if b[i] < 0x80 {
			return v, i + 1
		}
	}
	if len(b) < 9 {
		return 0, 0
	}
	return v<<8 | uint64(b[8]), 9
}
