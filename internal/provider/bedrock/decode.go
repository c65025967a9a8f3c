package bedrock

import (
	"bufio"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream/eventstreamapi"

	"github.com/sluicehq/sluice/internal/provider/anthropic"
	"github.com/sluicehq/sluice/internal/provider/jsonscan"
	"github.com/sluicehq/sluice/model"
)

// DefaultMaxFrameSize bounds one event-stream frame. A chunk carries one
// Messages API event, base64-encoded: the bound of an SSE event, and a
// third for the encoding.
const DefaultMaxFrameSize = 22 << 20

// frameOverhead is a frame's prelude (total and header lengths, their CRC)
// and its closing CRC.
const frameOverhead = 16

// decode reads an InvokeModelWithResponseStream answer from r and yields
// its parts, ending after the message_stop its chunks carry. It yields an
// error, as its last value, when the stream fails: ErrNotEventStream when r
// holds no frame (or its first is not one), ErrIncomplete when it ends,
// whole frame or not, before message_stop, ErrEventTooLarge for a frame
// above maxFrameSize, an *model.APIError for an exception (wrapped by
// wrap), ErrMalformedEvent for a frame or chunk it cannot read, or the read
// error.
func decode(r io.Reader, maxFrameSize int, wrap func(*model.APIError) error, yield func(model.Part, error) bool) {
	if err := readFrames(r, maxFrameSize, wrap, yield); err != nil {
		yield(model.Part{}, err)
	}
}

func readFrames(r io.Reader, maxFrameSize int, wrap func(*model.APIError) error, yield func(model.Part, error) bool) error {
	if maxFrameSize <= 0 {
		maxFrameSize = DefaultMaxFrameSize
	}
	src := &source{r: r}
	br := bufio.NewReaderSize(src, 32<<10)
	frames := eventstream.NewDecoder()
	events := anthropic.NewEventDecoder(func(e *model.APIError) error {
		e.Provider = "bedrock"
		return wrap(e)
	})
	var payload []byte
	for n := 0; ; n++ {
		// The library trusts a frame's declared length; check it first, so
		// that a broken or hostile server cannot make it buffer without
		// bound.
		prelude, err := br.Peek(8)
		switch {
		case err == io.EOF && len(prelude) == 0 && n == 0:
			return fmt.Errorf("bedrock: %w: the answer held no frame", model.ErrNotEventStream)
		case err == io.EOF && len(prelude) == 0:
			return fmt.Errorf("bedrock: %w: no message_stop", model.ErrIncomplete)
		case err == io.EOF:
			return fmt.Errorf("bedrock: %w: the stream was cut inside a frame", model.ErrIncomplete)
		case err != nil:
			return fmt.Errorf("bedrock: reading the stream: %w", err)
		}
		total, headers := binary.BigEndian.Uint32(prelude), binary.BigEndian.Uint32(prelude[4:])
		if total < frameOverhead || headers > total-frameOverhead {
			return badFrame(n, fmt.Errorf("frame of %d bytes declares %d bytes of headers", total, headers))
		}
		if int64(total) > int64(maxFrameSize) && n == 0 {
			// Text read as a prelude (a page without a content type) makes
			// a huge length more often than a stream's first frame, which
			// is a small message_start.
			return badFrame(n, fmt.Errorf("a first frame of %d bytes", total))
		}
		if int64(total) > int64(maxFrameSize) {
			return fmt.Errorf("bedrock: %w: a frame of %d bytes (at most %d)", model.ErrEventTooLarge, total, maxFrameSize)
		}
		msg, err := frames.Decode(br, payload)
		switch {
		case src.err != nil:
			return fmt.Errorf("bedrock: reading the stream: %w", src.err)
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
			return fmt.Errorf("bedrock: %w: the stream was cut inside a frame", model.ErrIncomplete)
		case err != nil:
			return badFrame(n, err) // a checksum, a header that does not decode
		}
		payload = msg.Payload[:0]
		done, err := handle(msg, events, wrap, yield)
		if err != nil || done {
			return err
		}
	}
}

// source remembers the error of reading the body (the network, the
// watchdog), which the frame decoder would not tell apart from a frame's.
type source struct {
	r   io.Reader
	err error
}

func (s *source) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil && err != io.EOF {
		s.err = err
	}
	return n, err
}

// badFrame is the error for frame number n that is not one: the whole body
// when it is the first (a proxy's page without a content type), a
// malformed event later.
func badFrame(n int, err error) error {
	if n == 0 {
		return fmt.Errorf("bedrock: %w: %v", model.ErrNotEventStream, err)
	}
	return fmt.Errorf("bedrock: %w: frame %d: %v", model.ErrMalformedEvent, n, err)
}

// handle yields the parts of one frame: a chunk's event, or an exception
// as an API error.
func handle(msg eventstream.Message, events *anthropic.EventDecoder, wrap func(*model.APIError) error, yield func(model.Part, error) bool) (done bool, err error) {
	switch header(msg, eventstreamapi.MessageTypeHeader) {
	case eventstreamapi.EventMessageType:
		if header(msg, eventstreamapi.EventTypeHeader) != "chunk" {
			return false, nil // event types added after this was written
		}
		data, err := chunk(msg.Payload)
		if err != nil {
			return false, fmt.Errorf("bedrock: %w: chunk: %v (%.80q)", model.ErrMalformedEvent, err, msg.Payload)
		}
		return events.Event(data, yield)
	case eventstreamapi.ExceptionMessageType:
		e := &model.APIError{Provider: "bedrock", Type: header(msg, eventstreamapi.ExceptionTypeHeader)}
		// The payload is {"message": ...}; an unreadable one still leaves
		// the exception's name.
		_ = jsonscan.Object(msg.Payload, func(k, v []byte) error {
			var err error
			if string(k) == "message" || string(k) == "Message" {
				e.Message, err = jsonscan.String(v)
			}
			return err
		})
		retryPolicy(e)
		return false, wrap(e)
	case eventstreamapi.ErrorMessageType:
		e := &model.APIError{Provider: "bedrock", Type: header(msg, eventstreamapi.ErrorCodeHeader), Message: header(msg, eventstreamapi.ErrorMessageHeader)}
		retryPolicy(e)
		return false, wrap(e)
	}
	return false, fmt.Errorf("bedrock: %w: a frame without a known %s", model.ErrMalformedEvent, eventstreamapi.MessageTypeHeader)
}

func header(msg eventstream.Message, name string) string {
	if v := msg.Headers.Get(name); v != nil {
		return v.String()
	}
	return ""
}

// chunk is the Messages API event that a chunk's payload,
// {"bytes":"<base64>","p":"<padding>"}, carries.
func chunk(payload []byte) ([]byte, error) {
	var b64 []byte
	err := jsonscan.Object(payload, func(k, v []byte) error {
		var err error
		if string(k) == "bytes" {
			b64, err = jsonscan.Unquote(v)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if b64 == nil {
		return nil, errors.New("no bytes")
	}
	data := make([]byte, base64.StdEncoding.DecodedLen(len(b64)))
	n, err := base64.StdEncoding.Decode(data, b64)
	return data[:n], err
}

// DecodeStream decodes an InvokeModelWithResponseStream answer read from r
// into parts, as Stream does with a response body; an exception is an
// *model.APIError. It is exported for benchmarks and tools.
func DecodeStream(r io.Reader, yield func(model.Part, error) bool) {
	decode(r, 0, func(e *model.APIError) error { return e }, yield)
}
