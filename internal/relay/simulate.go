package relay

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/sluicehq/sluice/internal/relay/route"
	"github.com/sluicehq/sluice/internal/relay/split"
	"github.com/sluicehq/sluice/internal/streamjson"
)

// Preview is one message the preview tool prints.
type Preview struct {
	Kind  route.Kind `json:"kind"`
	Text  string     `json:"text"`
	Units int        `json:"units"`
}

// Simulate reads a recorded run (stream-json, as Claude Code or sluice -p
// print it, or sluice's event notifications) and returns the messages the
// relay would send for it on a channel whose messages hold limit UTF-16
// units, in order. A recording has no times, so a short remark is listed
// on its own even where the relay, pacing a channel, would join it to the
// next message (see joiner).
func Simulate(r io.Reader, limit int) ([]Preview, error) {
	d := streamjson.NewDecoder()
	rt := route.New(limit)
	var out []Preview
	add := func(ms []route.Message) {
		for _, m := range ms {
			out = append(out, Preview{Kind: m.Kind, Text: m.Text, Units: split.Units(m.Text)})
		}
	}
	br := bufio.NewReader(r)
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			evs, derr := d.Line(line)
			if derr != nil {
				return nil, fmt.Errorf("line %d: %w", n, derr)
			}
			for _, ev := range evs {
				add(rt.Apply(ev))
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	res, _ := d.Result()
	add(rt.Finish(res.Text))
	return out, nil
}

// WritePreviews prints one JSON object per line.
func WritePreviews(w io.Writer, ps []Preview) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, p := range ps {
		if err := enc.Encode(p); err != nil {
			return err
		}
	}
	return nil
}
