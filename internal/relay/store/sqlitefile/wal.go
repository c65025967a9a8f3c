package sqlitefile

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

const (
	walMagic        = 0x377f0682 // or 0x377f0683: checksums in big-endian words
	walVersion      = 3007000
	walHeaderSize   = 32
	frameHeaderSize = 24
)

// readWAL finds the committed pages of a write-ahead log: for each page,
// the offset in wal of its version in the last valid commit, and the
// database's size in pages after that commit. A frame is valid while its
// salts match the header's and its checksum continues the running one;
// the first invalid frame ends the log, and frames after the last commit
// frame (one with a database size) are a transaction never committed. A
// log that is empty, too short or has a bad header is ignored (nil pages),
// as SQLite ignores it.
func readWAL(wal []byte, pageSize int) (pages map[uint32]int, dbSize uint32, err error) {
	if len(wal) < walHeaderSize {
		return nil, 0, nil
	}
	h := wal[:walHeaderSize]
	magic := binary.BigEndian.Uint32(h)
	if magic&^1 != walMagic {
		return nil, 0, nil
	}
	var order binary.ByteOrder = binary.LittleEndian
	if magic&1 == 1 {
		order = binary.BigEndian
	}
	ps := binary.BigEndian.Uint32(h[8:])
	if ps < 512 || ps > 65536 || ps&(ps-1) != 0 {
		return nil, 0, nil
	}
	s0, s1 := walChecksum(order, 0, 0, h[:24])
	if s0 != binary.BigEndian.Uint32(h[24:]) || s1 != binary.BigEndian.Uint32(h[28:]) {
		return nil, 0, nil
	}
	// A sound header of another version is a log SQLite refuses to open,
	// not one it ignores.
	if v := binary.BigEndian.Uint32(h[4:]); v != walVersion {
		return nil, 0, fmt.Errorf("WAL format version %d is not %d", v, walVersion)
	}
	if int(ps) != pageSize {
		return nil, 0, fmt.Errorf("the WAL's page size %d is not the database's %d", ps, pageSize)
	}
	salts := h[16:24]
	type frame struct {
		page uint32
		off  int
	}
	var pending []frame // the frames of the transaction being read
	frameSize := frameHeaderSize + int(ps)
	for off := walHeaderSize; off+frameSize <= len(wal); off += frameSize {
		fh := wal[off : off+frameHeaderSize]
		data := wal[off+frameHeaderSize : off+frameSize]
		page, commit := binary.BigEndian.Uint32(fh), binary.BigEndian.Uint32(fh[4:])
		if page == 0 || !bytes.Equal(fh[8:16], salts) {
			break
		}
		s0, s1 = walChecksum(order, s0, s1, fh[:8])
		s0, s1 = walChecksum(order, s0, s1, data)
		if s0 != binary.BigEndian.Uint32(fh[16:]) || s1 != binary.BigEndian.Uint32(fh[20:]) {
			break
		}
		pending = append(pending, frame{page, off + frameHeaderSize})
		if commit != 0 {
			if pages == nil {
				pages = map[uint32]int{}
			}
			// Later frames hold later versions of a page.
			for _, fr := range pending {
				pages[fr.page] = fr.off
			}
			pending = pending[:0]
			dbSize = commit
		}
	}
	return pages, dbSize, nil
}

// walChecksum continues the WAL's running checksum s0, s1 over b, whose
// length is a multiple of 8, read as 32-bit words in the given order.
func walChecksum(order binary.ByteOrder, s0, s1 uint32, b []byte) (uint32, uint32) {
	for i := 0; i+8 <= len(b); i += 8 {
		s0 += order.Uint32(b[i:]) + s1
		s1 += order.Uint32(b[i+4:]) + s0
	}
	return s0, s1
}
