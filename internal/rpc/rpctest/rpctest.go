// Package rpctest helps test hosts and servers of the host protocol: an
// in-memory pair of line connections. The fake model servers are package
// fakemodel's; the scripted model provider is modeltest.Script.
package rpctest

import (
	"io"

	"github.com/sluicehq/sluice/wire"
)

// Pipe returns two line connections joined in memory: what one writes the
// other reads, with no buffer in between. maxMessage is a's incoming limit
// (0: the default); b has the default. Closing either side ends both
// directions.
func Pipe(maxMessage int) (a, b *wire.LineConn) {
	ar, bw := io.Pipe()
	br, aw := io.Pipe()
	return wire.NewLineConn(ar, &joined{aw, bw}, maxMessage), wire.NewLineConn(br, &joined{bw, aw}, 0)
}

// joined is the write end of one pipe that, when closed, also closes the
// write end of the other, so that a Close on either side ends both
// directions.
type joined struct {
	w     *io.PipeWriter
	other *io.PipeWriter
}

func (j *joined) Write(p []byte) (int, error) { return j.w.Write(p) }

func (j *joined) Close() error {
	j.w.Close()
	j.other.Close()
	return nil
}
